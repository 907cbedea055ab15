package schemas_test

import (
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"himga.dev/himga/examples/go/schemas"
	memoryv1 "himga.dev/himga/generated/go/himga/memory/v1"
	"himga.dev/himga/tests/go/internal/testenv"
)

// The proto's Message and Session mirror the schemas, so a Go agent's ProtoJSON of them is a
// document the schemas judge: a whole LoCoMo conversation passes, a message without a role
// does not.
func TestProtoJSONOfGoMessagesFollowsTheSchemas(t *testing.T) {
	root := testenv.RepoRoot(t)
	c := schemas.NewCompiler()
	if _, err := schemas.AddFiles(c, filepath.Join(root, "schemas", "v1", "*.json")); err != nil {
		t.Fatal(err)
	}
	messageSchema := c.MustCompile("https://himga.dev/schemas/v1/message.json")
	sessionSchema := c.MustCompile("https://himga.dev/schemas/v1/session.json")
	// Empty strings are data here (content may be ""), so print every field without presence;
	// unset message fields (a Timestamp) stay out, as the schemas want absent, not null.
	printer := protojson.MarshalOptions{EmitDefaultValues: true}
	validate := func(schema interface{ Validate(any) error }, m proto.Message) error {
		raw, err := printer.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return schema.Validate(decode(t, raw))
	}

	sample, items := testenv.Conversation(t)
	sessions := map[string]*memoryv1.Session{}
	var order []string
	for _, item := range items {
		id := item.GetSession().GetSessionId()
		if sessions[id] == nil {
			sessions[id] = proto.CloneOf(item.GetSession())
			order = append(order, id)
		}
		sessions[id].Messages = append(sessions[id].Messages, item.GetMessage())
	}
	for _, id := range order {
		if err := validate(sessionSchema, sessions[id]); err != nil {
			t.Errorf("session %s: %v", id, err)
		}
	}

	for _, m := range []*memoryv1.Message{{Role: "user"}, {Role: "user", Content: "hi", TurnId: proto.String("")}} {
		if err := validate(messageSchema, m); err != nil {
			t.Errorf("%v: %v", m, err)
		}
	}
	if err := validate(messageSchema, &memoryv1.Message{Content: "who said this?"}); err == nil {
		t.Error("a message without a role passed the schema")
	}
	t.Logf("%d sessions of %s follow session.json", len(order), sample.SampleID)
}
