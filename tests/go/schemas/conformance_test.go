// Package schemas runs every conformance vector under schemas/conformance through a maintained
// draft 2020-12 validator for Go, with format assertions on, and expects the vector's verdict
// (the one the Python suite asserts). Files named *.schema.json there describe the vector
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
		Description string          `json:"description"`
		Data        json.RawMessage `json:"data"`
		Valid       bool            `json:"valid"`
	} `json:"tests"`
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
