package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestArchitectureNamesEveryPackageAndCommand: docs/ARCHITECTURE.md is the
// map a newcomer reads first, so every package under internal/ and cmd/
// is named in it (as `internal/x`), and every command of this CLI is named
// in the `cmd/minibroker` row (as `serve`). A package or command added
// without its line fails here.
func TestArchitectureNamesEveryPackageAndCommand(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	pkgs := goPackages(t, filepath.Join("..", ".."), "internal", "cmd")
	cmds := cliCommands()
	if len(pkgs) < 20 || len(cmds) < 10 {
		t.Fatalf("found %d packages and %d commands: too few to be checking anything", len(pkgs), len(cmds))
	}
	for _, m := range architectureMissing(string(doc), pkgs, cmds) {
		t.Errorf("docs/ARCHITECTURE.md does not name %s", m)
	}
}

// TestArchitectureCheckFailsOnMissingName is the negative control: the
// same check given the document with one package's and one command's
// names removed reports both.
func TestArchitectureCheckFailsOnMissingName(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	pkgs, cmds := goPackages(t, filepath.Join("..", ".."), "internal", "cmd"), cliCommands()
	before := map[string]bool{}
	for _, m := range architectureMissing(string(b), pkgs, cmds) {
		before[m] = true
	}
	doc := strings.ReplaceAll(string(b), "`internal/locktest`", "")
	doc = strings.ReplaceAll(doc, "`drill`", "drill")
	var got []string
	for _, m := range architectureMissing(doc, pkgs, cmds) {
		if !before[m] {
			got = append(got, m)
		}
	}
	want := []string{"command `drill` (in the `cmd/minibroker` row)", "package `internal/locktest`"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("newly missing %q, want %q", got, want)
	}
}

// architectureMissing lists the packages not named anywhere in doc and the
// commands not named in its `cmd/minibroker` table row.
func architectureMissing(doc string, pkgs, cmds []string) []string {
	var missing []string
	for _, p := range pkgs {
		if !strings.Contains(doc, "`"+p+"`") {
			missing = append(missing, "package `"+p+"`")
		}
	}
	row := ""
	for line := range strings.SplitSeq(doc, "\n") {
		if strings.HasPrefix(line, "| `cmd/minibroker` |") {
			row = line
		}
	}
	for _, c := range cmds {
		if !strings.Contains(row, "`"+c+"`") {
			missing = append(missing, "command `"+c+"` (in the `cmd/minibroker` row)")
		}
	}
	sort.Strings(missing)
	return missing
}

// goPackages lists, relative to root, the directories under each of dirs
// that hold a non-test .go file.
func goPackages(t *testing.T, root string, dirs ...string) []string {
	t.Helper()
	seen := map[string]bool{}
	for _, d := range dirs {
		err := filepath.WalkDir(filepath.Join(root, d), func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() && (e.Name() == "testdata" || strings.HasPrefix(e.Name(), ".")) {
				return filepath.SkipDir
			}
			if !e.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
				rel, err := filepath.Rel(root, filepath.Dir(path))
				if err != nil {
					return err
				}
				seen[filepath.ToSlash(rel)] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// cliCommands are the names of the root command's subcommands, less
// cobra's own (help, completion).
func cliCommands() []string {
	var out []string
	for _, c := range newRootCmd().Commands() {
		if n := c.Name(); n != "help" && n != "completion" {
			out = append(out, n)
		}
	}
	return out
}
