// Command validate checks JSON documents against himga's schemas, as a Go agent does before it
// sends or stores one. The schema is the document's own "$schema", or the one named by -type.
//
//	go run ./examples/go/validate -type message doc.json
//
// Exit status: 0 when every document is valid, 1 when one is not (each error names the field
// and the rule), 2 on a usage or I/O error.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"himga.dev/himga/examples/go/schemas"
)

const idBase = "https://himga.dev/schemas/v1/"

func main() {
	dir := flag.String("schemas", "schemas/v1", "the folder of himga's JSON Schemas")
	kind := flag.String("type", "", "the schema to use (message, session, episode_trace, ...); default: the document's $schema")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: validate [-schemas DIR] [-type NAME] FILE...")
		os.Exit(2)
	}
	c := schemas.NewCompiler()
	if _, err := schemas.AddFiles(c, filepath.Join(*dir, "*.json")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	status := 0
	for _, path := range flag.Args() {
		err := validate(c, path, *kind)
		var invalid *jsonschema.ValidationError
		switch {
		case errors.As(err, &invalid):
			fmt.Printf("%s: invalid\n%v\n", path, invalid)
			status = max(status, 1)
		case err != nil:
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			status = 2
		default:
			fmt.Printf("%s: valid\n", path)
		}
	}
	os.Exit(status)
}

func validate(c *jsonschema.Compiler, path, kind string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc, err := schemas.Decode(raw)
	if err != nil {
		return err
	}
	id := idBase + kind + ".json"
	if kind == "" {
		object, _ := doc.(map[string]any)
		if id, _ = object["$schema"].(string); id == "" {
			return errors.New("no -type given and the document names no $schema")
		}
	}
	schema, err := c.Compile(id)
	if err != nil {
		return err
	}
	return schema.Validate(doc)
}
