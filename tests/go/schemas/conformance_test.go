// Package schemas runs every conformance vector under schemas/conformance through a maintained
// draft 2020-12 validator for Go, with format assertions on, and expects the vector's verdict
// (the one the Python suite asserts): through the separate schema files, and through each
// type's bundle (generated/bundled/v1) with format assertion on and off, where only the vectors
// marked needs_format_assertion pass. Files named *.schema.json there describe the vector
// format itself; every vector file is checked against them too.
package schemas_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"himga.dev/himga/examples/go/schemas"
	"himga.dev/himga/tests/go/internal/testenv"
)

// group is one entry of a vector file, shaped like the JSON-Schema-Test-Suite.
type group struct {
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Tests       []struct {
		Description          string          `json:"description"`
		Data                 json.RawMessage `json:"data"`
		Valid                bool            `json:"valid"`
		NeedsFormatAssertion bool            `json:"needs_format_assertion"`
	} `json:"tests"`
}

// ref is the group's schema reference, such as https://himga.dev/schemas/v1/message.json.
type ref struct {
	Ref string `json:"$ref"`
}

func decode(t *testing.T, raw []byte) any {
	t.Helper()
	doc, err := schemas.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// vectorFiles are the files under dir that hold vectors (all *.json but *.schema.json).
func vectorFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".json") &&
			!strings.HasSuffix(path, ".schema.json") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no conformance vectors under %s", dir)
	}
	return files
}

func TestVectorsGetTheirVerdicts(t *testing.T) {
	root := testenv.RepoRoot(t)
	dir := filepath.Join(root, "schemas", "conformance")
	c := schemas.NewCompiler()
	if _, err := schemas.AddFiles(c, filepath.Join(root, "schemas", "v1", "*.json")); err != nil {
		t.Fatal(err)
	}
	formatIDs, err := schemas.AddFiles(c, filepath.Join(dir, "*.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var formats []*jsonschema.Schema
	for _, id := range formatIDs {
		formats = append(formats, c.MustCompile(id))
	}
	cases := 0
	for _, file := range vectorFiles(t, dir) {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(dir, file)
		for _, format := range formats {
			if err := format.Validate(decode(t, raw)); err != nil {
				t.Errorf("%s does not follow the vector format: %v", name, err)
			}
		}
		var groups []group
		if err := json.Unmarshal(raw, &groups); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i, g := range groups {
			// Each group's schema is a resource of its own, at a URL no schema uses.
			url := fmt.Sprintf("https://himga.dev/conformance-run/%s/%d", name, i)
			if err := c.AddResource(url, decode(t, g.Schema)); err != nil {
				t.Fatalf("%s[%d]: %v", name, i, err)
			}
			schema, err := c.Compile(url)
			if err != nil {
				t.Fatalf("%s[%d] %q: %v", name, i, g.Description, err)
			}
			for _, tc := range g.Tests {
				cases++
				t.Run(fmt.Sprintf("%s/%s/%s", name, g.Description, tc.Description), func(t *testing.T) {
					err := schema.Validate(decode(t, tc.Data))
					if got := err == nil; got != tc.Valid {
						t.Errorf("valid=%v, the vector says %v; data %s; validator: %v",
							got, tc.Valid, tc.Data, err)
					}
				})
			}
		}
	}
	t.Logf("%d vectors checked", cases)
}

// noDownload refuses every URL: a bundle must hold every schema it references.
type noDownload struct{}

func (noDownload) Load(url string) (any, error) {
	return nil, fmt.Errorf("the bundle sent the validator to fetch %s", url)
}

// bundle compiles one type's bundle, alone in a compiler of its own (the bundles share $ids).
func bundle(t *testing.T, path string, formats bool) *jsonschema.Schema {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if formats {
		c.AssertFormat()
	}
	c.UseLoader(noDownload{})
	if err := c.AddResource(path, decode(t, raw)); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return schema
}

func TestVectorsGetTheirVerdictsThroughTheBundles(t *testing.T) {
	root := testenv.RepoRoot(t)
	dir := filepath.Join(root, "schemas", "conformance")
	cases := 0
	for _, file := range vectorFiles(t, dir) {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(dir, file)
		var groups []group
		if err := json.Unmarshal(raw, &groups); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, g := range groups {
			var r ref
			if err := json.Unmarshal(g.Schema, &r); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			path := filepath.Join(root, "generated", "bundled", "v1", r.Ref[strings.LastIndex(r.Ref, "/")+1:])
			withFormats, withoutFormats := bundle(t, path, true), bundle(t, path, false)
			for _, tc := range g.Tests {
				cases++
				t.Run(fmt.Sprintf("%s/%s/%s", name, g.Description, tc.Description), func(t *testing.T) {
					doc := decode(t, tc.Data)
					err := withFormats.Validate(doc)
					if got := err == nil; got != tc.Valid {
						t.Errorf("with format assertion: valid=%v, the vector says %v; data %s; validator: %v",
							got, tc.Valid, tc.Data, err)
					}
					want := tc.Valid || tc.NeedsFormatAssertion
					err = withoutFormats.Validate(doc)
					if got := err == nil; got != want {
						t.Errorf("without format assertion: valid=%v, expected %v; data %s; validator: %v",
							got, want, tc.Data, err)
					}
				})
			}
		}
	}
	t.Logf("%d vectors checked through the bundles", cases)
}
