// Package testenv finds what himga's Go tests need: the repository root, the memory server to
// talk to (HIMGA_TARGET, set by tests/languages/test_go.py) and a LoCoMo file.
package testenv

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"himga.dev/himga/examples/go/locomo"
)

// RepoRoot is the directory holding go.mod, found upwards from the test's working directory.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// Target is the HOST:PORT of a running himga memory server. The Python driver
// (tests/languages/test_go.py) starts one and sets HIMGA_TARGET; run alone, the test is skipped
// with a note saying so (the driver fails on any skip).
func Target(t testing.TB) string {
	t.Helper()
	target := os.Getenv("HIMGA_TARGET")
	if target == "" {
		t.Skip("HIMGA_TARGET is not set: run through `pytest tests/languages/test_go.py`, " +
			"which starts a server")
	}
	return target
}

// LocomoPath is the LoCoMo file to replay: HIMGA_LOCOMO_PATH when set, else the development
// file beside the clone when present, else the project's small fixture.
func LocomoPath(t testing.TB) string {
	t.Helper()
	if path := os.Getenv("HIMGA_LOCOMO_PATH"); path != "" {
		return path
	}
	root := RepoRoot(t)
	dev := filepath.Join(root, "..", "shared", "data", "locomo", "locomo-dev.json")
	if _, err := os.Stat(dev); err == nil {
		return dev
	}
	fixtures, _ := filepath.Glob(filepath.Join(root, "tests", "fixtures", "locomo", "*.json"))
	if len(fixtures) == 0 {
		t.Fatal("no LoCoMo file: set HIMGA_LOCOMO_PATH")
	}
	sort.Strings(fixtures)
	return fixtures[0]
}

// Conversation is the first sample of the LoCoMo file (LocomoPath) and its messages as ingest
// items, in order.
func Conversation(t testing.TB) (locomo.Sample, []*locomo.Item) {
	t.Helper()
	samples, err := locomo.Load(LocomoPath(t))
	if err != nil || len(samples) == 0 {
		t.Fatalf("no LoCoMo sample: %v", err)
	}
	items, err := samples[0].Items()
	if err != nil {
		t.Fatal(err)
	}
	return samples[0], items
}
