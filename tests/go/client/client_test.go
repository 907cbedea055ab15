// Package client checks that a Go agent keeps a LoCoMo conversation in a himga memory server
// through the generated stubs: batch ingest, retrieval of the evidence, reset, and the errors a
// malformed request and a call naming another memory get, told apart by their reason.
package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"himga.dev/himga/examples/go/locomo"
	"himga.dev/himga/examples/go/memoryerr"
	memoryv1 "himga.dev/himga/generated/go/himga/memory/v1"
	"himga.dev/himga/tests/go/internal/testenv"
)

const (
	batchSize    = 64
	hitLimit     = 10
	maxQuestions = 5
)

var word = regexp.MustCompile(`[a-z0-9]+`)

func words(text string) []string {
	var out []string
	for _, w := range word.FindAllString(strings.ToLower(text), -1) {
		if len(w) >= 4 {
			out = append(out, w)
		}
	}
	return out
}

// question is one the rule below picks, with the turn that answers it.
type question struct {
	text     string
	evidence string
}

// findable picks, in file order, the questions a keyword search can be expected to answer: one
// evidence turn, sharing with the question a word of 4+ letters that no other turn of the
// whole conversation use. The rule reads only the data, so it holds for any LoCoMo file.
func findable(sample locomo.Sample, items []*locomo.Item) []question {
	turns := map[string]string{}
	usedBy := map[string]int{}
	for _, item := range items {
		turns[item.GetMessage().GetTurnId()] = item.GetMessage().GetContent()
		for _, w := range slices.Compact(slices.Sorted(slices.Values(words(item.GetMessage().GetContent())))) {
			usedBy[w]++
		}
	}
	var picked []question
	for _, qa := range sample.QA {
		if len(qa.Evidence) != 1 {
			continue
		}
		text, ok := turns[qa.Evidence[0]]
		if !ok {
			continue
		}
		inTurn := words(text)
		for _, w := range words(qa.Question) {
			if usedBy[w] == 1 && slices.Contains(inTurn, w) {
				picked = append(picked, question{qa.Question, qa.Evidence[0]})
				break
			}
		}
		if len(picked) == maxQuestions {
			break
		}
	}
	return picked
}

func newNamespace(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "go-client-" + hex.EncodeToString(b)
}

func hitIDs(hits []*memoryv1.Hit) []string {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.GetTurnId()
	}
	return ids
}

func TestGoAgentKeepsAConversation(t *testing.T) {
	client := connect(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	sample, items := testenv.Conversation(t)
	questions := findable(sample, items)
	if len(questions) == 0 {
		t.Fatal("the rule picked no question from the sample")
	}
	namespace := newNamespace(t)

	var ingested uint32
	for start := 0; start < len(items); start += batchSize {
		batch := items[start:min(start+batchSize, len(items))]
		resp, err := client.IngestBatch(ctx, &memoryv1.IngestBatchRequest{Namespace: namespace, Items: batch})
		if err != nil {
			t.Fatalf("IngestBatch of items %d..: %v", start, err)
		}
		ingested += resp.GetIngested()
	}
	if int(ingested) != len(items) {
		t.Fatalf("the server reports %d messages stored, sent %d", ingested, len(items))
	}

	for _, q := range questions {
		resp, err := client.Retrieve(ctx, &memoryv1.RetrieveRequest{Namespace: namespace, Query: q.text, Limit: hitLimit})
		if err != nil {
			t.Fatalf("Retrieve %q: %v", q.text, err)
		}
		ids := hitIDs(resp.GetHits())
		if !slices.Contains(ids, q.evidence) {
			t.Errorf("%q: evidence %s is not among the hits %v", q.text, q.evidence, ids)
		}
		if len(ids) > 0 && resp.GetContext() == "" {
			t.Errorf("%q: hits but an empty context", q.text)
		}
	}

	if _, err := client.Reset(ctx, &memoryv1.ResetRequest{Namespace: namespace}); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	for _, q := range questions {
		resp, err := client.Retrieve(ctx, &memoryv1.RetrieveRequest{Namespace: namespace, Query: q.text, Limit: hitLimit})
		if err != nil {
			t.Fatalf("Retrieve after Reset: %v", err)
		}
		if len(resp.GetHits()) != 0 || resp.GetContext() != "" {
			t.Errorf("%q after Reset: hits %v, context %q", q.text, hitIDs(resp.GetHits()), resp.GetContext())
		}
	}
	t.Logf("%d messages ingested, %d questions asked", ingested, len(questions))
}

// A Go agent asks within one session (a filter: every hit comes from it), deletes that session
// (the count of its messages), and nothing of it is a hit or listed again.
func TestGoAgentFiltersBySessionAndDeletesIt(t *testing.T) {
	client := connect(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	sample, items := testenv.Conversation(t)
	questions := findable(sample, items)
	if len(questions) == 0 {
		t.Fatal("the rule picked no question from the sample")
	}
	namespace := newNamespace(t)
	sessionOf := map[string]string{}
	for start := 0; start < len(items); start += batchSize {
		batch := items[start:min(start+batchSize, len(items))]
		resp, err := client.IngestBatch(ctx, &memoryv1.IngestBatchRequest{Namespace: namespace, Items: batch})
		if err != nil {
			t.Fatalf("IngestBatch of items %d..: %v", start, err)
		}
		for i, id := range resp.GetIds() {
			sessionOf[id] = batch[i].GetSession().GetSessionId()
		}
	}
	q := questions[0]
	session := sessionOf[q.evidence]
	inSession := &memoryv1.MessageFilter{SessionIds: []string{session}}
	inThatSession := 0
	for _, s := range sessionOf {
		if s == session {
			inThatSession++
		}
	}

	resp, err := client.Retrieve(ctx, &memoryv1.RetrieveRequest{
		Namespace: namespace, Query: q.text, Limit: hitLimit, Filter: inSession})
	if err != nil {
		t.Fatalf("Retrieve with a filter: %v", err)
	}
	if !slices.Contains(hitIDs(resp.GetHits()), q.evidence) {
		t.Errorf("%q in %s: evidence %s is not among the hits %v", q.text, session, q.evidence,
			hitIDs(resp.GetHits()))
	}
	for _, hit := range resp.GetHits() {
		if hit.GetSessionId() != session {
			t.Errorf("a hit of %s with a filter on %s", hit.GetSessionId(), session)
		}
	}

	deleted, err := client.Delete(ctx, &memoryv1.DeleteRequest{Namespace: namespace, Filter: inSession})
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if int(deleted.GetDeleted()) != inThatSession {
		t.Errorf("deleted %d messages, %s had %d", deleted.GetDeleted(), session, inThatSession)
	}
	resp, err = client.Retrieve(ctx, &memoryv1.RetrieveRequest{Namespace: namespace, Query: q.text, Limit: hitLimit})
	if err != nil {
		t.Fatalf("Retrieve after Delete: %v", err)
	}
	for _, hit := range resp.GetHits() {
		if hit.GetSessionId() == session {
			t.Errorf("hit %s of the deleted session %s", hit.GetTurnId(), session)
		}
	}
	listed, err := client.ListMessages(ctx, &memoryv1.ListMessagesRequest{Namespace: namespace, Filter: inSession})
	if err != nil {
		t.Fatalf("ListMessages: %v", err)
	}
	if len(listed.GetMessages()) != 0 {
		t.Errorf("%d messages of the deleted session listed", len(listed.GetMessages()))
	}
	t.Logf("%s: %d messages filtered to and deleted", session, inThatSession)
}

func TestEmptyRoleIsInvalidArgumentNamingTheField(t *testing.T) {
	client := connect(t)

	_, err := client.Ingest(t.Context(), &memoryv1.IngestRequest{
		Namespace: newNamespace(t),
		Message:   &memoryv1.Message{Role: "", Content: "who said this?"},
		Session:   &memoryv1.Session{SessionId: "s1"},
	})
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.InvalidArgument {
		t.Fatalf("want INVALID_ARGUMENT, got %v", err)
	}
	if reason := memoryerr.Reason(err); reason != memoryerr.InvalidRequest {
		t.Errorf("want reason %s, got %q (status %v)", memoryerr.InvalidRequest, reason, st)
	}
	var fields []string
	for _, v := range memoryerr.FieldViolations(err) {
		fields = append(fields, v.GetField())
	}
	if !slices.Contains(fields, "message.role") {
		t.Fatalf("want a BadRequest field violation for message.role, got %v (status %v)", fields, st)
	}
}

func TestAnotherMemoryForTheNamespaceIsMemoryMismatch(t *testing.T) {
	client := connect(t)
	namespace := newNamespace(t)
	ingest := func(memory string) error {
		_, err := client.Ingest(t.Context(), &memoryv1.IngestRequest{
			Namespace: namespace,
			Message:   &memoryv1.Message{Role: "user", Content: "hello"},
			Session:   &memoryv1.Session{SessionId: "s1"},
			Memory:    memory,
		})
		return err
	}

	// The first call opens the namespace with the keyword memory; it keeps it.
	if err := ingest("keyword"); err != nil {
		t.Fatalf("Ingest with memory keyword: %v", err)
	}
	err := ingest("null")
	if st, ok := status.FromError(err); !ok || st.Code() != codes.FailedPrecondition {
		t.Fatalf("want FAILED_PRECONDITION, got %v", err)
	}
	if reason := memoryerr.Reason(err); reason != memoryerr.MemoryMismatch {
		t.Fatalf("want reason %s, got %q (%v)", memoryerr.MemoryMismatch, reason, err)
	}
}

// connect is a client of the server under test (testenv.Target), closed when the test ends.
func connect(t *testing.T) memoryv1.MemoryServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(
		testenv.Target(t), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return memoryv1.NewMemoryServiceClient(conn)
}
