// Package httpjson holds a Go program's view of himga's HTTP JSON answers: decoded with the
// standard library's encoding/json into plain Go structs, the counts the schemas type as
// integers (access_count, tokens_used, duration_seconds, an action's t) fit an int.
package httpjson

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

// episode is an EpisodeTrace as a Go program would declare it by reading the schema.
type episode struct {
	ID              string `json:"id"`
	DurationSeconds int    `json:"duration_seconds"`
	TokensUsed      int    `json:"tokens_used"`
	AccessCount     int    `json:"access_count"`
	ActionLog       []struct {
		T      int    `json:"t"`
		Action string `json:"action"`
	} `json:"action_log"`
}

func origin(t *testing.T) string {
	t.Helper()
	found := os.Getenv("HIMGA_HTTP")
	if found == "" {
		t.Skip("HIMGA_HTTP is not set: run through `pytest tests/languages/test_go.py`, which starts a server")
	}
	return found
}

func post(t *testing.T, url, body string) []byte {
	t.Helper()
	answer, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer answer.Body.Close()
	raw, err := io.ReadAll(answer.Body)
	if err != nil {
		t.Fatal(err)
	}
	if answer.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %s", url, answer.StatusCode, raw)
	}
	return raw
}

func TestCountsDecodeIntoInts(t *testing.T) {
	base := origin(t) + "/himga.memory.v1.EpisodeService/"
	recorded := `{"namespace": "go-counts", "episode": {"id": "ep-go", "task_id": "t1",
		"timestamp": "2025-03-01T09:00:00Z", "duration_seconds": 60, "agent": "go",
		"context": {"goal": "count things", "phase": "ACT", "files_involved": []},
		"action_log": [{"t": 5, "action": "edit_file", "target": "a.go", "result": "ok"}],
		"tokens_used": 1234}}`
	post(t, base+"RecordEpisode", recorded)
	raw := post(t, base+"GetEpisode", `{"namespace": "go-counts", "id": "ep-go"}`)
	var got struct {
		Episode episode `json:"episode"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("encoding/json into ints: %v\n%s", err, raw)
	}
	e := got.Episode
	if e.AccessCount != 1 || e.TokensUsed != 1234 || e.DurationSeconds != 60 {
		t.Fatalf("counts %d %d %d in %s", e.AccessCount, e.TokensUsed, e.DurationSeconds, raw)
	}
	if len(e.ActionLog) != 1 || e.ActionLog[0].T != 5 {
		t.Fatalf("action log %+v in %s", e.ActionLog, raw)
	}
}

// The listing comes after TestCountsDecodeIntoInts (go test runs a file's tests in order): two
// GetEpisode calls have counted the episode twice.
func TestListEpisodesDecodesIntoInts(t *testing.T) {
	base := origin(t) + "/himga.memory.v1.EpisodeService/"
	post(t, base+"GetEpisode", `{"namespace": "go-counts", "id": "ep-go"}`)
	raw := post(t, base+"ListEpisodes", `{"namespace": "go-counts"}`)
	var got struct {
		Episodes []episode `json:"episodes"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("encoding/json into ints: %v\n%s", err, raw)
	}
	if len(got.Episodes) != 1 || got.Episodes[0].AccessCount != 2 {
		t.Fatalf("episodes %+v in %s", got.Episodes, raw)
	}
}
