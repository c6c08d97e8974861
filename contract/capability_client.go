package contract

// A client capability is a tool of the caller's front end (AG-UI's
// frontend tools, docs/ag-ui.md): the model calls it, the call waits as an
// approval does (listed by approvals, client: true), and the client runs
// it and answers with decide's "result", which the model reads as the
// call's result. Refusing it (approve false), its approvalTimeout, a close
// or a cancel-turn answer the model that the client did not run it.

// MaxClientResultBytes bounds a client capability's result (decide's
// "result"), as an activity capability's result is bounded.
const MaxClientResultBytes = 64 << 10

func checkClientCapability(p string, c Capability) error {
	if c.Agent != nil {
		return Invalid("%s.agent: only a delegate capability names an agent; a client capability is run by the caller's front end", p)
	}
	switch {
	case c.Activity != "", c.TaskQueue != "", c.StartToCloseTimeout != "", c.StartTimeout != "", c.CallTimeout != "", c.Retry != nil:
		return Invalid("%s: a client capability takes \"name\", \"description\", \"parameters\", \"condition\" and \"approvalTimeout\" (how long its call waits for the client's result); its front end runs it, so it has no activity, queue, timeouts or retry", p)
	case c.Approval != "" || c.ApprovalCondition != "":
		return Invalid("%s.approval: every call of a client capability waits for the client's result; it takes no \"approval\" or \"approvalCondition\"", p)
	}
	if err := checkParameters(p, c); err != nil {
		return err
	}
	if c.ApprovalTimeout != "" {
		return checkDuration(p+".approvalTimeout", c.ApprovalTimeout, MinApprovalTimeout, 0, ", or left out to wait for the client without limit")
	}
	return nil
}
