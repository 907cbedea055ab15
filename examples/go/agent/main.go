// Command agent is a Go agent that learns from its own episodes in a himga server: it records an
// episode after a task (a failing test it fixed), then, before its next task, searches the
// episodes with that task's TaskContext and prints the context it would put in its prompt.
//
//	make serve    # in another terminal: the server on 127.0.0.1:50051
//	go run ./examples/go/agent
//
// A server with an auth file takes -token (or $HIMGA_TOKEN); one that speaks TLS takes -tls-ca,
// and mutual TLS -tls-cert and -tls-key too: the client example's flags, from examples/go/dial.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"strings"
	"time"

	"himga.dev/himga/examples/go/dial"
	"himga.dev/himga/examples/go/episodes"
	"himga.dev/himga/examples/go/memoryerr"
	memoryv1 "himga.dev/himga/generated/go/himga/memory/v1"
)

func main() {
	target := flag.String("target", "127.0.0.1:50051", "the memory server, HOST:PORT")
	namespace := flag.String("namespace", "go-agent", "the namespace of the agent's episodes")
	var reach dial.Options
	reach.AddFlags(flag.CommandLine) // -token, -tls-ca, -tls-cert, -tls-key
	flag.Parse()
	if err := run(*target, reach, *namespace); err != nil {
		log.Fatal(err)
	}
}

func run(target string, reach dial.Options, namespace string) error {
	conn, err := reach.Connect(target)
	if err != nil {
		return err
	}
	defer conn.Close()
	client := memoryv1.NewEpisodeServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// After a task: what was done, what went wrong, and how it was fixed.
	done := episodes.Task{
		ID:       "task-login-redirect",
		Goal:     "Fix the login redirect loop",
		Phase:    "ACT",
		Started:  time.Now().Add(-10 * time.Minute),
		Read:     []string{"auth/views.py"},
		Modified: []string{"auth/session.py", "tests/test_login.py"},
		Actions: []*memoryv1.ActionEntry{
			{T: 30, Action: "run_tests", Target: "pytest tests/test_login.py", Result: "1 failed"},
			{T: 240, Action: "edit_file", Target: "auth/session.py", Result: "saved"},
		},
		Errors: []*memoryv1.ErrorEntry{{
			Type: "test_failure", Message: "redirect loop in test_login",
			Resolution: "clear the stale session key on logout",
		}},
	}
	episode, err := episodes.Record(ctx, client, namespace, "go-agent", done)
	if err != nil {
		switch memoryerr.Reason(err) {
		case memoryerr.InvalidRequest:
			var fields []string
			for _, v := range memoryerr.FieldViolations(err) {
				fields = append(fields, v.GetField()+": "+v.GetDescription())
			}
			return fmt.Errorf("episode refused: %s", strings.Join(fields, "; "))
		case memoryerr.Unauthenticated, memoryerr.PermissionDenied:
			return fmt.Errorf("the server refused the token (pass -token, or ask for a token "+
				"granting read and write on %q): %w", namespace, err)
		}
		return err
	}
	fmt.Printf("recorded episode %s\n", episode.GetId())

	// Before the next task: what the agent's past says about it.
	next := &memoryv1.TaskContext{
		Goal:          "Logout leaves users in a redirect loop; fix it",
		Phase:         "ACT",
		FilesInvolved: []string{"auth/session.py"},
	}
	text, hits, err := episodes.Before(ctx, client, namespace, next, "redirect loop", 200)
	if err != nil {
		return err
	}
	for _, hit := range hits {
		fmt.Printf("found %s (score %.2f)\n", hit.GetEpisode().GetId(), hit.GetScore())
	}
	fmt.Printf("context for the prompt:\n%s\n", text)
	return nil
}
