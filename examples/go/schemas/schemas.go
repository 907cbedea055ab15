// Package schemas validates JSON documents against himga's JSON Schemas (draft 2020-12) in Go,
// with santhosh-tekuri/jsonschema: every schema of a folder is known by its $id, so the
// cross-file references resolve offline, and formats (date-time) are asserted.
package schemas

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// offline refuses every URL not added as a resource, so a reference the schemas do not resolve
// among themselves is an error instead of a download.
type offline struct{}

func (offline) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s is not one of the given schemas", url)
}

// Decode reads JSON as the validator wants it (numbers kept exact).
func Decode(raw []byte) (any, error) {
	return jsonschema.UnmarshalJSON(bytes.NewReader(raw))
}

// NewCompiler compiles draft 2020-12 with format assertions on, and loads nothing by itself.
func NewCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(offline{})
	return c
}

// AddFiles adds every schema file matching pattern (such as "schemas/v1/*.json") to c under
// its $id, and returns the ids.
func AddFiles(c *jsonschema.Compiler, pattern string) ([]string, error) {
	files, err := filepath.Glob(pattern)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		doc, err := Decode(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		object, _ := doc.(map[string]any)
		id, _ := object["$id"].(string)
		if id == "" {
			return nil, fmt.Errorf("%s has no $id", file)
		}
		if err := c.AddResource(id, doc); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("no schema matches %s", pattern)
	}
	return ids, nil
}
