package repocheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// publicPackages are the module's public packages: what another module may
// import. Everything else lives under internal/.
var publicPackages = []string{"agents", "agenttest", "contract", "plugin", "starter", "worker"}

// TestNoPublicExportNamesAnInternalType: an exported identifier of a public
// package whose type names a type of an internal/ package cannot be used by
// another module (it cannot name the type, nor often build a value of it),
// so it is a door that does not open. Funcs, methods of exported types
// (promoted ones included), exported struct fields, interface methods,
// aliases, vars and consts are all checked.
//
// The packages are read from the compiler's export data (go list -export),
// so the check type-checks nothing itself and needs no dependency.
func TestNoPublicExportNamesAnInternalType(t *testing.T) {
	pkgs := loadPublic(t)
	var offenders []string
	for _, p := range pkgs {
		offenders = append(offenders, internalExports(p)...)
	}
	slices.Sort(offenders)
	for _, o := range offenders {
		t.Error(o)
	}
	if len(offenders) > 0 {
		t.Logf("%d public exports name internal types: move them under internal/ or stop naming the internal type", len(offenders))
	}
}

// moduleRoot is the repository's root (two levels above this file).
func moduleRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// loadPublic imports the public packages from their export data.
func loadPublic(t *testing.T) []*types.Package {
	t.Helper()
	root := moduleRoot(t)
	args := []string{"list", "-export", "-deps", "-json=ImportPath,Export,Module"}
	for _, p := range publicPackages {
		args = append(args, "./"+p)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	exports := map[string]string{}
	var modulePath string
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Export     string
			Module     *struct {
				Path string
				Main bool
			}
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
		if p.Module != nil && p.Module.Main {
			modulePath = p.Module.Path
		}
	}
	if modulePath == "" {
		t.Fatal("go list named no package of the main module")
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	var pkgs []*types.Package
	for _, p := range publicPackages {
		pkg, err := imp.Import(modulePath + "/" + p)
		if err != nil {
			t.Fatalf("importing %s: %v", p, err)
		}
		pkgs = append(pkgs, pkg)
	}
	return pkgs
}

// internalPath says whether a package path is under an internal/ folder.
func internalPath(path string) bool {
	return strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal") || strings.HasPrefix(path, "internal/")
}

// internalExports lists each exported identifier of pkg whose type names an
// internal type, as "pkg.Name: type".
func internalExports(pkg *types.Package) []string {
	var out []string
	report := func(name string, typ types.Type) {
		if bad := internalNamed(typ); len(bad) > 0 {
			out = append(out, fmt.Sprintf("%s.%s names %s (%s)", pkg.Name(), name, strings.Join(bad, ", "), types.TypeString(typ, types.RelativeTo(pkg))))
		}
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Func, *types.Var, *types.Const:
			report(name, obj.Type())
		case *types.TypeName:
			if obj.IsAlias() {
				report(name, obj.Type())
				continue
			}
			named, ok := obj.Type().(*types.Named)
			if !ok {
				continue
			}
			if tp := named.TypeParams(); tp != nil {
				for i := range tp.Len() {
					report(name+"["+tp.At(i).Obj().Name()+"]", tp.At(i).Constraint())
				}
			}
			switch u := named.Underlying().(type) {
			case *types.Struct:
				for i := range u.NumFields() {
					if f := u.Field(i); f.Exported() {
						report(name+"."+f.Name(), f.Type())
					}
				}
			case *types.Interface:
				for i := range u.NumMethods() {
					if m := u.Method(i); m.Exported() {
						report(name+"."+m.Name(), m.Type())
					}
				}
				for i := range u.NumEmbeddeds() {
					report(name+" (embeds)", u.EmbeddedType(i))
				}
			default:
				report(name+" (underlying)", u)
			}
			// Methods, promoted ones included, of T and *T.
			seen := map[string]bool{}
			for _, recv := range []types.Type{named, types.NewPointer(named)} {
				ms := types.NewMethodSet(recv)
				for i := range ms.Len() {
					m := ms.At(i).Obj()
					if !m.Exported() || seen[m.Name()] {
						continue
					}
					if _, isIface := named.Underlying().(*types.Interface); isIface {
						continue // reported above
					}
					seen[m.Name()] = true
					report(name+"."+m.Name(), m.Type())
				}
			}
		}
	}
	return out
}

// internalNamed lists the internal types typ names: named types declared
// in an internal package, wherever they sit in typ (parameters, results,
// elements, fields, type arguments). Named types of other packages are not
// entered: their own package answers for their insides.
func internalNamed(typ types.Type) []string {
	var bad []string
	seen := map[types.Type]bool{}
	var walk func(types.Type)
	walk = func(t types.Type) {
		if t == nil || seen[t] {
			return
		}
		seen[t] = true
		switch t := t.(type) {
		case *types.Alias:
			// An alias a public package declares (the SDK's workflow.Context
			// for its internal type) is a name any module can use: its
			// package answers for what it stands for.
			if o := t.Obj(); o.Pkg() != nil && internalPath(o.Pkg().Path()) {
				bad = append(bad, o.Pkg().Path()+"."+o.Name())
				walk(types.Unalias(t))
			}
		case *types.Named:
			if o := t.Obj(); o.Pkg() != nil && internalPath(o.Pkg().Path()) {
				bad = append(bad, o.Pkg().Path()+"."+o.Name())
			}
			if args := t.TypeArgs(); args != nil {
				for i := range args.Len() {
					walk(args.At(i))
				}
			}
		case *types.Pointer:
			walk(t.Elem())
		case *types.Slice:
			walk(t.Elem())
		case *types.Array:
			walk(t.Elem())
		case *types.Map:
			walk(t.Key())
			walk(t.Elem())
		case *types.Chan:
			walk(t.Elem())
		case *types.Signature:
			walk(t.Params())
			walk(t.Results())
		case *types.Tuple:
			for i := range t.Len() {
				walk(t.At(i).Type())
			}
		case *types.Struct:
			for i := range t.NumFields() {
				if f := t.Field(i); f.Exported() {
					walk(f.Type())
				}
			}
		case *types.Interface:
			for i := range t.NumMethods() {
				walk(t.Method(i).Type())
			}
			for i := range t.NumEmbeddeds() {
				walk(t.EmbeddedType(i))
			}
		case *types.Union:
			for i := range t.Len() {
				walk(t.Term(i).Type())
			}
		case *types.TypeParam:
			walk(t.Constraint())
		}
	}
	walk(typ)
	slices.Sort(bad)
	return slices.Compact(bad)
}

// TestTheCheckReportsAnInternalTypeInAPublicSignature shows the check can
// fail: a public func whose result is an internal type, and a public
// struct field of it, are reported; a func naming only public types is not.
func TestTheCheckReportsAnInternalTypeInAPublicSignature(t *testing.T) {
	inner := types.NewPackage("example.com/m/internal/kit", "kit")
	hidden := types.NewNamed(types.NewTypeName(token.NoPos, inner, "Hidden", nil), types.Typ[types.Int], nil)
	pub := types.NewPackage("example.com/m/door", "door")
	result := types.NewTuple(types.NewVar(token.NoPos, pub, "", hidden))
	pub.Scope().Insert(types.NewFunc(token.NoPos, pub, "Open", types.NewSignatureType(nil, nil, nil, nil, result, false)))
	plain := types.NewTuple(types.NewVar(token.NoPos, pub, "", types.Typ[types.String]))
	pub.Scope().Insert(types.NewFunc(token.NoPos, pub, "Name", types.NewSignatureType(nil, nil, nil, nil, plain, false)))
	field := types.NewField(token.NoPos, pub, "Kit", hidden, false)
	cfgName := types.NewTypeName(token.NoPos, pub, "Config", nil)
	types.NewNamed(cfgName, types.NewStruct([]*types.Var{field}, nil), nil)
	pub.Scope().Insert(cfgName)

	got := internalExports(pub)
	if len(got) != 2 || !strings.HasPrefix(got[0], "door.Config.Kit names example.com/m/internal/kit.Hidden") ||
		!strings.HasPrefix(got[1], "door.Open names example.com/m/internal/kit.Hidden") {
		t.Fatalf("want door.Config.Kit and door.Open reported, got %q", got)
	}
}
