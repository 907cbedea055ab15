// Package locomo reads conversations in the layout of LoCoMo's locomo10.json (a JSON array of
// samples) into the MemoryService's messages, so that a Go agent can replay one into a himga
// server.
package locomo

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	memoryv1 "himga.dev/himga/generated/go/himga/memory/v1"
)

// Turn is one dialog turn as LoCoMo writes it.
type Turn struct {
	Speaker     string `json:"speaker"`
	DiaID       string `json:"dia_id"`
	Text        string `json:"text"`
	BlipCaption string `json:"blip_caption"`
}

// QA is one question about a conversation, with the turns that answer it.
type QA struct {
	Question string   `json:"question"`
	Evidence Evidence `json:"evidence"`
	Category int      `json:"category"`
}

// Evidence is the dia_ids a question's evidence names, in order and without repeats. LoCoMo
// writes a few entries oddly ("D8:6; D9:17", "D 10 : 01"): each id found in a string entry is
// kept, as himga's Python loader reads them; entries that are not strings are skipped.
type Evidence []string

var diaID = regexp.MustCompile(`D\s*(\d+)\s*:\s*(\d+)`)

func (e *Evidence) UnmarshalJSON(raw []byte) error {
	var entries []any
	if err := json.Unmarshal(raw, &entries); err != nil {
		*e = nil
		return nil
	}
	var found Evidence
	for _, entry := range entries {
		text, ok := entry.(string)
		if !ok {
			continue
		}
		for _, m := range diaID.FindAllStringSubmatch(text, -1) {
			session, _ := strconv.Atoi(m[1])
			turn, _ := strconv.Atoi(m[2])
			if id := fmt.Sprintf("D%d:%d", session, turn); !slices.Contains(found, id) {
				found = append(found, id)
			}
		}
	}
	*e = found
	return nil
}

// Sample is one conversation with its questions.
type Sample struct {
	SampleID     string                     `json:"sample_id"`
	Conversation map[string]json.RawMessage `json:"conversation"`
	QA           []QA                       `json:"qa"`
}

// Item is one message with the session it was said in, ready for IngestBatch.
type Item = memoryv1.IngestItem

var sessionKey = regexp.MustCompile(`^session_(\d+)$`)

// Load reads every sample of a locomo10-layout file.
func Load(path string) ([]Sample, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var samples []Sample
	if err := json.Unmarshal(raw, &samples); err != nil {
		return nil, fmt.Errorf("%s: not a LoCoMo file: %w", path, err)
	}
	return samples, nil
}

// Items are the sample's turns in order (sessions by number), each as a Message in its Session.
// An image turn reads "[Image: <caption>] <text>", as himga's Python loader renders it.
func (s Sample) Items() ([]*Item, error) {
	var numbers []int
	for key := range s.Conversation {
		if m := sessionKey.FindStringSubmatch(key); m != nil {
			n, _ := strconv.Atoi(m[1])
			numbers = append(numbers, n)
		}
	}
	sort.Ints(numbers)
	var items []*Item
	for _, n := range numbers {
		var turns []Turn
		key := fmt.Sprintf("session_%d", n)
		if err := json.Unmarshal(s.Conversation[key], &turns); err != nil {
			return nil, fmt.Errorf("%s.%s: %w", s.SampleID, key, err)
		}
		session := &memoryv1.Session{SessionId: key}
		var date string
		if err := json.Unmarshal(s.Conversation[key+"_date_time"], &date); err == nil {
			session.DateStr = &date
		}
		for _, t := range turns {
			content := t.Text
			if caption := strings.TrimSpace(t.BlipCaption); caption != "" {
				content = strings.TrimRightFunc(fmt.Sprintf("[Image: %s] %s", caption, t.Text), unicode.IsSpace)
			}
			turnID := t.DiaID
			items = append(items, &Item{
				Message: &memoryv1.Message{Role: t.Speaker, Content: content, TurnId: &turnID},
				Session: session,
			})
		}
	}
	return items, nil
}
