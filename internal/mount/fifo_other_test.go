//go:build !unix

package mount

import "errors"

func mkfifo(string) error { return errors.New("no FIFOs here") }
