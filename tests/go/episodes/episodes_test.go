// Package episodes checks that a Go agent records an episode after a task and finds it, with
// its resolution, by searching with the next task's TaskContext; and that the episode comes
// back equal, and NOT_FOUND (by its reason) once deleted.
package episodes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"himga.dev/himga/examples/go/episodes"
	"himga.dev/himga/examples/go/memoryerr"
	memoryv1 "himga.dev/himga/generated/go/himga/memory/v1"
	"himga.dev/himga/tests/go/internal/testenv"
)

func connect(t *testing.T) (memoryv1.EpisodeServiceClient, string, context.Context) {
	t.Helper()
	conn, err := grpc.NewClient(testenv.Target(t), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	suffix := make([]byte, 6)
	if _, err := rand.Read(suffix); err != nil {
		t.Fatal(err)
	}
	return memoryv1.NewEpisodeServiceClient(conn), "go-episodes-" + hex.EncodeToString(suffix), ctx
}

func fixTask(id, goal, modified string) episodes.Task {
	return episodes.Task{
		ID: id, Goal: goal, Phase: "ACT", Started: time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC),
		Read: []string{"auth/views.py"}, Modified: []string{modified},
		Actions: []*memoryv1.ActionEntry{{T: 12, Action: "edit_file", Target: modified, Result: "saved"}},
		Errors: []*memoryv1.ErrorEntry{{
			Type: "test_failure", Message: "redirect loop in test_login", Resolution: "clear the stale session key",
		}},
	}
}

func TestTheNextTaskFindsTheEpisodeOfTheLastOne(t *testing.T) {
	client, namespace, ctx := connect(t)
	wanted, err := episodes.Record(ctx, client, namespace, "go-agent", fixTask("t1", "Fix the login redirect loop", "auth/session.py"))
	if err != nil {
		t.Fatal(err)
	}
	other := fixTask("t2", "Speed up the report export", "reports/export.py")
	other.Errors = nil
	if _, err := episodes.Record(ctx, client, namespace, "go-agent", other); err != nil {
		t.Fatal(err)
	}
	next := &memoryv1.TaskContext{Goal: "Users are stuck in a redirect loop; fix it", FilesInvolved: []string{"auth/session.py"}}
	text, hits, err := episodes.Before(ctx, client, namespace, next, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || hits[0].GetEpisode().GetId() != wanted.GetId() {
		t.Fatalf("hits %v, want %s first", hits, wanted.GetId())
	}
	if !strings.Contains(text, "clear the stale session key") || len(text) > 100*4 {
		t.Fatalf("context %q: want the resolution, within 400 characters", text)
	}
	if hits[0].GetEpisode().GetAccessCount() != 1 {
		t.Fatalf("access_count %v after one search, want 1", hits[0].GetEpisode().GetAccessCount())
	}
}

func TestTheEpisodeComesBackEqualAndIsNotFoundOnceDeleted(t *testing.T) {
	client, namespace, ctx := connect(t)
	sent, err := episodes.Record(ctx, client, namespace, "go-agent", fixTask("t1", "Fix the login redirect loop", "auth/session.py"))
	if err != nil {
		t.Fatal(err)
	}
	list, err := client.ListEpisodes(ctx, &memoryv1.ListEpisodesRequest{Namespace: namespace, File: "auth/session.py"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.GetEpisodes()) != 1 || !proto.Equal(list.GetEpisodes()[0], sent) {
		t.Fatalf("listed %v, recorded %v", list.GetEpisodes(), sent)
	}
	if _, err := client.DeleteEpisode(ctx, &memoryv1.DeleteEpisodeRequest{Namespace: namespace, Id: sent.GetId()}); err != nil {
		t.Fatal(err)
	}
	_, err = client.GetEpisode(ctx, &memoryv1.GetEpisodeRequest{Namespace: namespace, Id: sent.GetId()})
	if memoryerr.Reason(err) != memoryerr.NotFound {
		t.Fatalf("GetEpisode after delete: %v, want reason %s", err, memoryerr.NotFound)
	}
}

func TestAnInvalidEpisodeNamesItsField(t *testing.T) {
	client, namespace, ctx := connect(t)
	task := fixTask("t1", "", "auth/session.py")
	_, err := episodes.Record(ctx, client, namespace, "go-agent", task)
	if memoryerr.Reason(err) != memoryerr.InvalidRequest {
		t.Fatalf("got %v, want reason %s", err, memoryerr.InvalidRequest)
	}
	var fields []string
	for _, v := range memoryerr.FieldViolations(err) {
		fields = append(fields, v.GetField())
	}
	if strings.Join(fields, ",") != "episode.context.goal" {
		t.Fatalf("violations %v, want episode.context.goal", fields)
	}
}
