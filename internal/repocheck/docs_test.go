package repocheck

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// maxReadmeLines is the README's budget: it says what the product is, how
// to run and test it, three ways to use it, the layout and what to read
// first; everything else lives in docs/.
const maxReadmeLines = 160

func TestReadmeIsAFrontDoorOfAtMost160Lines(t *testing.T) {
	text := read(t, filepath.Join(root(t), "README.md"))
	n := strings.Count(text, "\n")
	if !strings.HasSuffix(text, "\n") {
		n++
	}
	if n > maxReadmeLines {
		t.Errorf("README.md has %d lines, at most %d: move the details to a document under docs/ and link it", n, maxReadmeLines)
	}
	if !strings.Contains(text, "(docs/README.md)") {
		t.Error("README.md does not link docs/README.md, the index of the documents")
	}
}

func TestTheDocsIndexLinksEveryDoc(t *testing.T) {
	dir := filepath.Join(root(t), "docs")
	index := filepath.Join(dir, "README.md")
	linked := map[string]bool{}
	for _, l := range links(read(t, index)) {
		if target, ok := localTarget(l.target); ok {
			linked[filepath.Clean(filepath.Join(dir, target))] = true
		}
	}
	docs, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range docs {
		if doc == index {
			continue
		}
		if !linked[filepath.Clean(doc)] {
			t.Errorf("docs/README.md does not list docs/%s: add a line saying what it holds, under its audience", filepath.Base(doc))
		}
	}
}

func TestEveryRelativeLinkInTheDocsPointsToAFile(t *testing.T) {
	r := root(t)
	files, err := filepath.Glob(filepath.Join(r, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(r, "README.md")}, files...)
	for _, file := range files {
		rel, _ := filepath.Rel(r, file)
		for _, l := range links(read(t, file)) {
			target, ok := localTarget(l.target)
			if !ok {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(file), target)); err != nil {
				t.Errorf("%s:%d: the link %q points to no file", rel, l.line, l.target)
			}
		}
	}
}

// citation matches the word seed or issue, singular or plural, in any case,
// followed by a number, with or without "#".
var citation = regexp.MustCompile(`(?i)\bseeds? #?[0-9]|\bissues? #?[0-9]`)

func TestNoGoCommentCitesASeedOrAnIssueNumber(t *testing.T) {
	r := root(t)
	var found []finding
	fset := token.NewFileSet()
	err := filepath.WalkDir(r, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != r && (name == "testdata" || name == "bin" || name == "vendor" || name == "node_modules" ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		// Only comments are read: a string literal may name an issue.
		f, perr := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.AllErrors)
		if f == nil {
			t.Errorf("%s: %v", path, perr)
			return nil
		}
		rel, _ := filepath.Rel(r, path)
		for _, group := range f.Comments {
			for _, c := range group.List {
				for i, line := range strings.Split(c.Text, "\n") {
					if citation.MatchString(line) {
						found = append(found, finding{rel, fset.Position(c.Slash).Line + i, strings.TrimSpace(line)})
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		sort.Slice(found, func(i, j int) bool {
			if found[i].file != found[j].file {
				return found[i].file < found[j].file
			}
			return found[i].line < found[j].line
		})
		lines := make([]string, len(found))
		for i, f := range found {
			lines[i] = f.file + ":" + strconv.Itoa(f.line) + ": " + f.text
		}
		t.Errorf("%d Go comment lines cite a seed or an issue number; link the section of docs/ that explains the point instead (for example docs/contract.md#messages):\n%s",
			len(found), strings.Join(lines, "\n"))
	}
}

// finding is a comment line that cites a seed or an issue.
type finding struct {
	file string
	line int
	text string
}

type link struct {
	target string
	line   int
}

var (
	mdLink   = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeSpan = regexp.MustCompile("`[^`]*`")
)

// links lists the Markdown links and images of text outside fenced code
// blocks and code spans.
func links(text string) []link {
	var out []link
	fenced := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			out = append(out, link{target: m[1], line: i + 1})
		}
	}
	return out
}

// localTarget is the file part of a link that names a file of the
// repository; false for web links, mail and anchors within the page.
func localTarget(target string) (string, bool) {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
		return "", false
	}
	if i := strings.IndexAny(target, "#?"); i >= 0 {
		target = target[:i]
	}
	return filepath.FromSlash(target), target != ""
}

// root is the repository's root: the folder that holds go.mod.
func root(t *testing.T) string {
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
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
