// Command client is a Go agent keeping a LoCoMo conversation in a himga memory server:
// it stores the first conversation of a locomo10-layout file in batches, asks its first
// questions, prints what the memory recalls, asks again within the first session only (a
// filter), forgets that session (a delete), and forgets it all again.
//
//	make serve    # in another terminal: the server on 127.0.0.1:50051
//	go run ./examples/go/client -locomo ../shared/data/locomo/locomo-dev.json
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"himga.dev/himga/examples/go/dial"
	"himga.dev/himga/examples/go/locomo"
	"himga.dev/himga/examples/go/memoryerr"
	memoryv1 "himga.dev/himga/generated/go/himga/memory/v1"
)

func main() {
	target := flag.String("target", "127.0.0.1:50051", "the memory server, HOST:PORT")
	path := flag.String("locomo", "", "a LoCoMo file (locomo10 layout)")
	namespace := flag.String("namespace", "go-example", "the namespace to keep the conversation in")
	memoryName := flag.String("memory", "", "the memory to open the namespace with (empty: the server's)")
	questions := flag.Int("questions", 3, "how many of its questions to ask")
	var reach dial.Options
	reach.AddFlags(flag.CommandLine) // -token, -tls-ca, -tls-cert, -tls-key
	flag.Parse()
	if *path == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*target, reach, *path, *namespace, *memoryName, *questions); err != nil {
		log.Fatal(err)
	}
}

func run(target string, reach dial.Options, path, namespace, memoryName string, questions int) error {
	samples, err := locomo.Load(path)
	if err != nil {
		return err
	}
	if len(samples) == 0 {
		return fmt.Errorf("%s holds no conversation", path)
	}
	sample := samples[0]
	items, err := sample.Items()
	if err != nil {
		return err
	}

	conn, err := reach.Connect(target)
	if err != nil {
		return err
	}
	defer conn.Close()
	memory := memoryv1.NewMemoryServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// All of a batch is stored, or none of it when any message is malformed. A failure is told
	// apart by its reason (memoryerr), not by its status code.
	const batchSize = 64
	for start := 0; start < len(items); start += batchSize {
		batch := items[start:min(start+batchSize, len(items))]
		req := &memoryv1.IngestBatchRequest{Namespace: namespace, Items: batch, Memory: memoryName}
		if _, err := memory.IngestBatch(ctx, req); err != nil {
			switch memoryerr.Reason(err) {
			case memoryerr.InvalidRequest:
				var fields []string
				for _, v := range memoryerr.FieldViolations(err) {
					fields = append(fields, v.GetField()+": "+v.GetDescription())
				}
				return fmt.Errorf("messages %d.. refused, none stored: %s", start, strings.Join(fields, "; "))
			case memoryerr.Unauthenticated, memoryerr.PermissionDenied:
				return fmt.Errorf("the server refused the token (pass -token, or ask for a token "+
					"granting write on %q): %w", namespace, err)
			case memoryerr.MemoryMismatch:
				return fmt.Errorf("namespace %q holds another memory: pass its memory with -memory, "+
					"or pick another -namespace (%w)", namespace, err)
			}
			return fmt.Errorf("storing messages %d..: %w", start, err)
		}
	}
	fmt.Printf("stored %d messages of %s in namespace %q\n", len(items), sample.SampleID, namespace)

	for _, qa := range sample.QA[:min(questions, len(sample.QA))] {
		resp, err := memory.Retrieve(ctx, &memoryv1.RetrieveRequest{
			Namespace: namespace, Query: qa.Question, Limit: 3, Memory: memoryName})
		if err != nil {
			return err
		}
		fmt.Printf("\nQ: %s (evidence %v)\n", qa.Question, qa.Evidence)
		for _, hit := range resp.GetHits() {
			fmt.Printf("  %-6s %.2f  %s: %s\n", hit.GetTurnId(), hit.GetScore(), hit.GetRole(), hit.GetContent())
		}
	}

	if len(sample.QA) > 0 && len(items) > 0 {
		if err := forgetASession(ctx, memory, namespace, memoryName, sample.QA[0].Question,
			items[0].GetSession().GetSessionId()); err != nil {
			return err
		}
	}

	_, err = memory.Reset(ctx, &memoryv1.ResetRequest{Namespace: namespace, Memory: memoryName})
	if err != nil {
		return err
	}
	fmt.Printf("\nreset namespace %q\n", namespace)
	return nil
}

// forgetASession asks `question` within one session only (a filter: no hit comes from another
// session), deletes that session, and asks again: nothing of it is left.
func forgetASession(ctx context.Context, memory memoryv1.MemoryServiceClient, namespace, memoryName,
	question, session string) error {
	inSession := &memoryv1.MessageFilter{SessionIds: []string{session}}
	ask := func() (*memoryv1.RetrieveResponse, error) {
		return memory.Retrieve(ctx, &memoryv1.RetrieveRequest{
			Namespace: namespace, Query: question, Limit: 3, Filter: inSession, Memory: memoryName})
	}
	resp, err := ask()
	if err != nil {
		if memoryerr.Reason(err) == memoryerr.Unsupported {
			fmt.Printf("\nnamespace %q cannot filter: %v\n", namespace, err)
			return nil
		}
		return err
	}
	fmt.Printf("\nQ: %s (in %s only)\n", question, session)
	for _, hit := range resp.GetHits() {
		fmt.Printf("  %-6s %.2f  %s %s: %s\n", hit.GetTurnId(), hit.GetScore(), hit.GetSessionId(),
			hit.GetRole(), hit.GetContent())
	}

	deleted, err := memory.Delete(ctx, &memoryv1.DeleteRequest{
		Namespace: namespace, Filter: inSession, Memory: memoryName})
	if err != nil {
		return err
	}
	resp, err = ask()
	if err != nil {
		return err
	}
	fmt.Printf("deleted %d messages of %s; %d hits left there\n", deleted.GetDeleted(), session,
		len(resp.GetHits()))
	return nil
}
