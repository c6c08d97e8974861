package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

type usageError struct {
	msg       string
	showUsage bool // the command itself is missing or unknown
}

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

var errHelp = errors.New("help")

// dispatch finds the command, parses its flags (and the global ones,
// anywhere on the line) and runs it.
func (x *cli) dispatch(args []string) (any, error) {
	i, err := x.skipGlobalFlags(args)
	if err != nil {
		return nil, err
	}
	if i >= len(args) {
		return nil, errHelp
	}
	name := args[i]
	if name == "help" {
		return nil, errHelp
	}
	cmd, ok := findCommand(name)
	if !ok {
		return nil, &usageError{msg: fmt.Sprintf("unknown command %q", name), showUsage: true}
	}
	rest := append(append([]string(nil), args[:i]...), args[i+1:]...)
	fs := newFlagSet(name)
	x.globalFlags(fs)
	if cmd.flags != nil {
		cmd.flags(fs, &x.opt)
	}
	pos, err := parseFlags(fs, rest)
	if err != nil {
		return nil, err
	}
	x.name, x.set = name, setFlags(fs)
	return cmd.run(x, pos)
}

// skipGlobalFlags returns the index of the command: flags before it may
// only be global ones (they are parsed with the command's).
func (x *cli) skipGlobalFlags(args []string) (int, error) {
	globals := newFlagSet("starter")
	x.globalFlags(globals)
	i := 0
	for i < len(args) && isFlag(args[i]) {
		if args[i] == "--" {
			i++
			break
		}
		name, hasValue := flagName(args[i])
		if name == "h" || name == "help" {
			return 0, errHelp
		}
		f := globals.Lookup(name)
		if f == nil {
			return 0, usagef("unknown flag %s (before the command only --address, --namespace and --task-queue may come)", args[i])
		}
		i++
		if !hasValue && !isBoolFlag(f) {
			i++
		}
	}
	return i, nil
}

func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

func (x *cli) globalFlags(fs *flag.FlagSet) {
	fs.StringVar(&x.address, "address", x.address, "Temporal frontend host:port")
	fs.StringVar(&x.namespace, "namespace", x.namespace, "Temporal namespace")
	fs.StringVar(&x.taskQueue, "task-queue", x.taskQueue, "the workers' task queue")
}

func isFlag(a string) bool { return len(a) > 1 && a[0] == '-' }

func flagName(a string) (name string, hasValue bool) {
	name = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
	name, _, hasValue = strings.Cut(name, "=")
	return name, hasValue
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// parseFlags parses flags anywhere among the arguments (the flag package
// stops at the first positional one) and returns the positional ones. "--"
// ends the flags.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if !isFlag(a) {
			pos = append(pos, a)
			continue
		}
		name, hasValue := flagName(a)
		if name == "h" || name == "help" {
			return nil, errHelp
		}
		f := fs.Lookup(name)
		if f == nil {
			return nil, usagef("%s: unknown flag %s", fs.Name(), a)
		}
		flags = append(flags, a)
		if !hasValue && !isBoolFlag(f) {
			if i+1 >= len(args) {
				return nil, usagef("%s: flag %s needs a value", fs.Name(), a)
			}
			i++
			flags = append(flags, args[i])
		}
	}
	if err := fs.Parse(flags); err != nil {
		return nil, usagef("%s: %v", fs.Name(), err)
	}
	return pos, nil
}

// setFlags names the flags given on the command line.
func setFlags(fs *flag.FlagSet) map[string]bool {
	m := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { m[f.Name] = true })
	return m
}

func oneTaskID(cmd string, pos []string) (string, error) {
	if len(pos) == 0 {
		return "", usagef("%s: TASK_ID is missing", cmd)
	}
	if len(pos) > 1 {
		return "", usagef("%s: unexpected arguments after the task ID: %q", cmd, pos[1:])
	}
	return pos[0], nil
}
