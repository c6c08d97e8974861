package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progressMin is the size from which a terminal shows a progress bar.
const progressMin = 4 << 20

// progress wraps r, a file of size bytes being moved, for stderr: a
// progress bar when stderr is a terminal and the file is over a few MB;
// done prints a plain final line ("uploaded NAME: N bytes in T") when
// stderr is not a terminal (the bar says as much when it is).
func (x *cli) progress(verb, name string, size int64, r io.Reader) (io.Reader, func(err error)) {
	start := time.Now()
	var n countingReader
	n.r = r
	f, tty := x.stderr.(*os.File)
	tty = tty && term.IsTerminal(int(f.Fd()))
	if !tty || size < progressMin {
		return &n, func(err error) {
			if err == nil && !tty && x.stderr != nil {
				fmt.Fprintf(x.stderr, "%s %s: %d bytes in %s\n", verb, name, n.n, time.Since(start).Round(time.Millisecond))
			}
		}
	}
	bar := progressbar.NewOptions64(size,
		progressbar.OptionSetWriter(x.stderr),
		progressbar.OptionSetDescription(verb+" "+name),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(x.stderr) }),
	)
	pr := progressbar.NewReader(&n, bar)
	return &pr, func(err error) {
		if err == nil {
			_ = bar.Finish()
		} else {
			_ = bar.Exit()
		}
	}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += int64(k)
	return k, err
}
