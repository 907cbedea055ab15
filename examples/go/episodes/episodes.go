// Package episodes is what a Go agent needs to learn from its own past work through a himga
// server's EpisodeService: an episode recorded after each task, and the episodes that matter
// searched with the next task's TaskContext before it starts.
package episodes

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "himga.dev/himga/generated/go/himga/memory/v1"
)

// Task is what an agent knows of a task when it ends: enough to record it as an episode.
type Task struct {
	ID       string
	Goal     string
	Phase    string // "REASON", "ACT", "REFLECT", "VERIFY" or ""
	Started  time.Time
	Read     []string
	Modified []string
	Actions  []*memoryv1.ActionEntry
	Errors   []*memoryv1.ErrorEntry
	Failed   bool
}

// Episode is the EpisodeTrace of a finished task: context.files_involved is the files read,
// then those modified, each once, as the schema asks.
func Episode(agent string, task Task) *memoryv1.EpisodeTrace {
	outcome := "success"
	if task.Failed {
		outcome = "failure"
	}
	var involved []string
	seen := map[string]bool{}
	for _, path := range append(append([]string{}, task.Read...), task.Modified...) {
		if !seen[path] {
			seen[path] = true
			involved = append(involved, path)
		}
	}
	return &memoryv1.EpisodeTrace{
		Id:                fmt.Sprintf("ep-%s-%s", task.Started.UTC().Format("2006-01-02"), task.ID),
		TaskId:            task.ID,
		Timestamp:         timestamppb.New(task.Started),
		DurationSeconds:   float64(int64(time.Since(task.Started).Seconds())),
		Agent:             agent,
		Context:           &memoryv1.EpisodeContext{Goal: task.Goal, Phase: task.Phase, FilesInvolved: involved},
		ActionLog:         task.Actions,
		Outcome:           &outcome,
		ErrorsEncountered: task.Errors,
		FilesRead:         task.Read,
		FilesModified:     task.Modified,
	}
}

// Record stores the episode of a finished task in the agent's namespace.
func Record(ctx context.Context, client memoryv1.EpisodeServiceClient, namespace, agent string, task Task) (*memoryv1.EpisodeTrace, error) {
	episode := Episode(agent, task)
	_, err := client.RecordEpisode(ctx, &memoryv1.RecordEpisodeRequest{Namespace: namespace, Episode: episode})
	return episode, err
}

// Before searches the episodes that matter for the next task and returns the context to put in
// its prompt (at most budget tokens of 4 characters) and the episodes behind it, best first.
func Before(ctx context.Context, client memoryv1.EpisodeServiceClient, namespace string, next *memoryv1.TaskContext, text string, budget uint32) (string, []*memoryv1.EpisodeHit, error) {
	resp, err := client.SearchEpisodes(ctx, &memoryv1.SearchEpisodesRequest{
		Namespace: namespace, Task: next, Query: text, Limit: 3, MaxContextTokens: budget,
	})
	if err != nil {
		return "", nil, err
	}
	return resp.GetContext(), resp.GetHits(), nil
}
