// Package locomo_test checks the Go LoCoMo reader against what himga's Python loader does with
// the same file layout: evidence ids, session order, image turns.
package locomo_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"himga.dev/himga/examples/go/locomo"
)

func TestEvidenceKeepsEveryIDFoundInStringEntries(t *testing.T) {
	var qa locomo.QA
	raw := `{"question": "q", "evidence": ["D8:6; D9:17", "D 10 : 01", "not an id", 7, "D8:6"]}`
	if err := json.Unmarshal([]byte(raw), &qa); err != nil {
		t.Fatal(err)
	}
	if want := (locomo.Evidence{"D8:6", "D9:17", "D10:1"}); !slices.Equal(qa.Evidence, want) {
		t.Fatalf("evidence %v, want %v", qa.Evidence, want)
	}
}

func TestItemsFollowSessionNumbersAndRenderImages(t *testing.T) {
	raw := `[{"sample_id": "s", "qa": [], "conversation": {
		"speaker_a": "A", "speaker_b": "B",
		"session_10": [{"speaker": "A", "dia_id": "D10:1", "text": "ten"}],
		"session_2_date_time": "1:56 pm on 8 May, 2023",
		"session_2": [{"speaker": "B", "dia_id": "D2:1", "text": "", "blip_caption": " a mug "}]}}]`
	path := filepath.Join(t.TempDir(), "locomo.json")
	if err := os.WriteFile(path, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	samples, err := locomo.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	items, err := samples[0].Items()
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ session, date, turn, role, content string }
	var got []row
	for _, it := range items {
		got = append(got, row{it.GetSession().GetSessionId(), it.GetSession().GetDateStr(),
			it.GetMessage().GetTurnId(), it.GetMessage().GetRole(), it.GetMessage().GetContent()})
	}
	want := []row{
		{"session_2", "1:56 pm on 8 May, 2023", "D2:1", "B", "[Image: a mug]"},
		{"session_10", "", "D10:1", "A", "ten"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("items %v, want %v", got, want)
	}
	if items[1].GetSession().DateStr != nil {
		t.Fatal("a session without a date has date_str set")
	}
}

func TestAFileOfAnotherShapeIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "other.json")
	if err := os.WriteFile(path, []byte(`{"sample_id": "s"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := locomo.Load(path); err == nil {
		t.Fatal("an object was read as a LoCoMo file")
	}
}
