package main

import (
	"flag"
	"mime"
	"os"
	"path/filepath"
	"strings"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/mount"
	"github.com/agenttask/agenttask/starter"
)

// upload TASK_ID FILE --mount NAME|--mount-url URL [--root task] [--as PATH] [--mime TYPE]
// streams a file into the task's space of the agent's mount and prints the
// ContentPart to send. No Temporal connection is needed.
func uploadFlags(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.mount, "mount", "", "the agent's mount, by its name in AGENT_MOUNTS (the workers' list)")
	fs.StringVar(&o.mountURL, "mount-url", "", "the agent's mount URL (file:///..., s3://..., gs://...), when AGENT_MOUNTS is not at hand")
	fs.StringVar(&o.root, "root", "task", "the agent's mount root: references read <root>://<path>")
	fs.StringVar(&o.as, "as", "", "path in the task's space; default the file's name")
	fs.StringVar(&o.mime, "mime", "", "media type; default guessed from the extension")
}

func upload(x *cli, pos []string) (any, error) {
	o := &x.opt
	if len(pos) != 2 {
		return nil, usagef("upload takes TASK_ID FILE")
	}
	if (o.mount == "") == (o.mountURL == "") {
		return nil, usagef("upload needs --mount NAME (a mount of AGENT_MOUNTS) or --mount-url URL")
	}
	var mounts mount.Mounts
	if o.mount != "" {
		var err error
		if mounts, err = mount.ParseMounts(x.getenv(mount.EnvMounts)); err != nil {
			return nil, usagef("%v", err)
		}
	}
	f, err := os.Open(pos[1])
	if err != nil {
		return nil, err
	}
	defer f.Close()
	path := o.as
	if path == "" {
		path = filepath.Base(pos[1])
	}
	mt := o.mime
	if mt == "" {
		if mt = mime.TypeByExtension(filepath.Ext(path)); mt == "" {
			mt = "application/octet-stream"
		}
		mt = strings.SplitN(mt, ";", 2)[0]
	}
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	r, done := x.progress("uploaded", path, size, f) // progress.go: a bar on a terminal's stderr
	var part contract.ContentPart
	if o.mount != "" {
		part, err = starter.UploadNamed(x.ctx, mounts, o.root, o.mount, pos[0], path, mt, r)
	} else {
		part, err = starter.Upload(x.ctx, contract.MountSpec{Root: o.root, URL: o.mountURL}, pos[0], path, mt, r)
	}
	done(err)
	return part, err
}
