package main

import "github.com/agenttask/agenttask/starter"

// delete removes a task and everything it owns (starter.Client.Delete) and
// prints what went: {"tasks": [...], "terminated", "executions",
// "transcriptObjects", "files", "events"}.
var deleteTask = onTask(func(x *cli, c *starter.Client, id string) (any, error) { return c.Delete(x.ctx, id) })
