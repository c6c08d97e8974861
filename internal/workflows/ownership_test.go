package workflows

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The task's run-time state is split into parts (the fields of task below
// that hold state), and each part's fields are read and written only in the
// file that declares them: state changes through its owner's methods. A
// part may embed smaller parts (Carry does, one per concern); each embedded
// part's fields belong to the file that declares that embedded type.
//
// This test parses the package's files and lists every selector that
// reaches a part's field from another file: `t.<part>.<field>` outside the
// field's file, and `r.<field>` in a method of a part type declared in
// another file. The task's other fields (args, agent, rules, logger, reader,
// dc) are its read-only inputs, set once at setup.

// taskInputs are the task's fields that are not parts.
var taskInputs = map[string]bool{"args": true, "agent": true, "rules": true, "logger": true, "reader": true, "dc": true}

type ownership struct {
	fset *token.FileSet
	// types maps a struct type declared in the package to its file and fields.
	types map[string]*declaredStruct
	// parts maps the task's part field names to their type names.
	parts map[string]string
}

type declaredStruct struct {
	file     string
	fields   map[string]string // field name -> the file that owns it
	embedded []string          // embedded struct types of the package
}

func loadOwnership(t *testing.T) (*ownership, map[string]*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*ast.File{}
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		src, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, n, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[n] = f
	}
	return declare(fset, files), files
}

// declare reads the struct types the files declare, and the task's parts.
func declare(fset *token.FileSet, files map[string]*ast.File) *ownership {
	o := &ownership{fset: fset, types: map[string]*declaredStruct{}, parts: map[string]string{}}
	for name, f := range files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, s := range gd.Specs {
				ts := s.(*ast.TypeSpec)
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				ds := &declaredStruct{file: name, fields: map[string]string{}}
				for _, fld := range st.Fields.List {
					if len(fld.Names) == 0 {
						ds.embedded = append(ds.embedded, typeName(fld.Type))
						continue
					}
					for _, n := range fld.Names {
						ds.fields[n.Name] = name
						if ts.Name.Name == "task" && !taskInputs[n.Name] {
							o.parts[n.Name] = typeName(fld.Type)
						}
					}
				}
				o.types[ts.Name.Name] = ds
			}
		}
	}
	// Promote embedded parts' fields, each owned by its own type's file.
	for _, ds := range o.types {
		o.promote(ds, ds)
	}
	return o
}

func (o *ownership) promote(into, from *declaredStruct) {
	for _, e := range from.embedded {
		inner, ok := o.types[e]
		if !ok {
			continue // a type of another package (contract.StartArgs)
		}
		for f := range inner.fields {
			if _, own := into.fields[f]; !own {
				into.fields[f] = inner.file
			}
		}
		o.promote(into, inner)
	}
}

// partTypes are the types of the task's parts and the parts they embed.
func (o *ownership) partTypes() map[string]bool {
	out := map[string]bool{}
	var add func(string)
	add = func(n string) {
		ds, ok := o.types[n]
		if !ok || out[n] {
			return
		}
		out[n] = true
		for _, e := range ds.embedded {
			add(e)
		}
	}
	for _, ty := range o.parts {
		add(ty)
	}
	return out
}

func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return typeName(e.X)
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return typeName(e.X) + "." + e.Sel.Name
	}
	return ""
}

// violations lists, for the package's files, every reach into a part's
// field from a file that does not own it.
func (o *ownership) violations(files map[string]*ast.File) []string {
	partTypes := o.partTypes()
	var out []string
	for name, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			recv, recvType := "", ""
			if fd.Recv != nil && len(fd.Recv.List) == 1 && len(fd.Recv.List[0].Names) == 1 {
				recv, recvType = fd.Recv.List[0].Names[0].Name, typeName(fd.Recv.List[0].Type)
			}
			if partTypes[recvType] && o.types[recvType].file != name {
				out = append(out, fmt.Sprintf("%s: method %s.%s belongs in %s, beside its type", o.fset.Position(fd.Pos()), recvType, fd.Name.Name, o.types[recvType].file))
			}
			// aliases are locals that hold a part (s := t.durable): their
			// selectors reach into the part as t.durable's would.
			aliases := map[string]string{}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if as, ok := n.(*ast.AssignStmt); ok && recvType == "task" && len(as.Lhs) == len(as.Rhs) {
					for i, r := range as.Rhs {
						rs, ok := r.(*ast.SelectorExpr)
						id, isIdent := as.Lhs[i].(*ast.Ident)
						if !ok || !isIdent {
							continue
						}
						if base, ok := rs.X.(*ast.Ident); ok && base.Name == recv && o.parts[rs.Sel.Name] != "" {
							aliases[id.Name] = rs.Sel.Name
						}
					}
				}
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				var owner *declaredStruct
				what := ""
				if x, ok := sel.X.(*ast.Ident); ok && aliases[x.Name] != "" {
					part := aliases[x.Name]
					owner, what = o.types[o.parts[part]], x.Name+"."+sel.Sel.Name+" (t."+part+")"
					if file, isField := owner.fields[sel.Sel.Name]; isField && file != name {
						out = append(out, fmt.Sprintf("%s: %s is owned by %s", o.fset.Position(sel.Pos()), what, file))
					}
					return true
				}
				switch x := sel.X.(type) {
				case *ast.SelectorExpr: // t.<part>.<field>
					base, ok := x.X.(*ast.Ident)
					ty, isPart := o.parts[x.Sel.Name]
					if !ok || recvType != "task" || base.Name != recv || !isPart {
						return true
					}
					owner, what = o.types[ty], "t."+x.Sel.Name+"."+sel.Sel.Name
				case *ast.Ident: // r.<field> in a method of a part type
					if x.Name != recv || !partTypes[recvType] {
						return true
					}
					owner, what = o.types[recvType], recv+"."+sel.Sel.Name
				default:
					return true
				}
				if owner == nil {
					return true
				}
				file, isField := owner.fields[sel.Sel.Name]
				if isField && file != name {
					out = append(out, fmt.Sprintf("%s: %s is owned by %s", o.fset.Position(sel.Pos()), what, file))
				}
				return true
			})
		}
	}
	sort.Strings(out)
	return out
}

func TestNoFileReachesIntoAPartItDoesNotOwn(t *testing.T) {
	o, files := loadOwnership(t)
	if len(o.parts) < 8 {
		t.Fatalf("found %d parts in task (%v): the test no longer reads the task's declaration", len(o.parts), o.parts)
	}
	if v := o.violations(files); len(v) > 0 {
		t.Errorf("%d reaches into a part from a file that does not own it; move the code into the owner's file as a method of the part:\n%s", len(v), strings.Join(v, "\n"))
	}
}

// The check itself catches a reach: a file that writes another part's
// field is reported.
func TestTheOwnershipCheckReportsAReachIntoAnotherFilesPart(t *testing.T) {
	fset := token.NewFileSet()
	src := map[string]string{
		"a.go": "package workflows\ntype task struct { args int; box box }\ntype box struct{ n int }\nfunc (b *box) inc() { b.n++ }\n",
		"b.go": "package workflows\nfunc (t *task) poke() { t.box.n = 2; t.box.inc(); x := t.box; x.n = 3 }\nfunc (b *box) peek() int { return b.n }\n",
	}
	files := map[string]*ast.File{}
	for n, s := range src {
		f, err := parser.ParseFile(fset, n, s, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[n] = f
	}
	o := declare(fset, files)
	v := o.violations(files)
	want := []string{"t.box.n is owned by a.go", "x.n (t.box) is owned by a.go", "method box.peek belongs in a.go", "b.n is owned by a.go"}
	joined := strings.Join(v, "\n")
	for _, w := range want {
		if !strings.Contains(joined, w) {
			t.Errorf("the check missed %q; it reported:\n%s", w, joined)
		}
	}
	if strings.Contains(joined, "inc") {
		t.Errorf("a method call is not a reach into the part, yet it was reported:\n%s", joined)
	}
}
