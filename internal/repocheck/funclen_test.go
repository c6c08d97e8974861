package repocheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Function length: a function a reader must hold in their head at once
// stays short. The report and the chat, once the longest functions of the
// repository (195 and 112 lines), are held to readingLines; no function
// anywhere may grow past anyLines again.
const (
	readingLines = 60
	anyLines     = 110
)

// heldToReading are the files whose every function stays within
// readingLines: the bench's report and entry point, the starter's chat.
var heldToReading = []string{
	"internal/bench/main.go",
	"internal/bench/report.go",
	"cmd/starter/chat.go",
}

func TestFunctionsStayShort(t *testing.T) {
	dir := root(t)
	var long []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "testdata" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		limit := anyLines
		for _, f := range heldToReading {
			if filepath.ToSlash(rel) == f {
				limit = readingLines
			}
		}
		found, err := longFunctions(path, limit)
		if err != nil {
			return err
		}
		for _, l := range found {
			long = append(long, rel+": "+l)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range heldToReading {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s is held to %d lines a function but is gone: update heldToReading (%v)", f, readingLines, err)
		}
	}
	if len(long) > 0 {
		t.Errorf("%d functions are longer than their limit (%d lines in %v, %d elsewhere); split them into the steps they take:\n%s",
			len(long), readingLines, heldToReading, anyLines, strings.Join(long, "\n"))
	}
}

// longFunctions lists the functions of the Go file at path longer than
// limit lines, as "name: N lines".
func longFunctions(path string, limit int) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	return longIn(fset, f, limit), nil
}

func longIn(fset *token.FileSet, f *ast.File, limit int) []string {
	var out []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > limit {
			out = append(out, fmt.Sprintf("%s: %d lines", fd.Name.Name, n))
		}
	}
	return out
}

// The check can fail: a function one line over the limit is reported, one
// at the limit is not.
func TestTheLengthCheckReportsALongFunction(t *testing.T) {
	body := func(name string, lines int) string {
		return "func " + name + "() {\n" + strings.Repeat("\t_ = 1\n", lines-2) + "}\n"
	}
	src := "package p\n\n" + body("atLimit", 5) + body("overLimit", 6)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := longIn(fset, f, 5)
	if len(got) != 1 || got[0] != "overLimit: 6 lines" {
		t.Fatalf("want only overLimit reported, got %q", got)
	}
}
