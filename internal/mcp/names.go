package mcp

// Names lists the servers the pool reaches, sorted (for messages that tell
// a caller which names it may use).
func (p *Pool) Names() []string { return p.servers.Names() }
