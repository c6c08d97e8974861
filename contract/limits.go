package contract

// Limits of the runtime (docs/contract.md#limits). Bytes are decimal where
// the contract says KB.
const (
	MaxInlineTextBytes   = 100_000    // a text part's inline budget
	MaxMetadataBytes     = 8_000      // a part's metadata, serialised
	MaxInputBytes        = 256 << 10  // one TaskIO, serialised: keeps every payload well under 512 KiB
	MaxAgentSpecBytes    = 128 << 10  // the agent travels with every model call
	DefaultContextTokens = 128_000    // when the agent names none
	MaxContextTokens     = 10_000_000 // sanity bound
	MaxTokensLimit       = 1_000_000  // sanity bound on maxTokens
	BytesPerToken        = 4          // the window estimate: conservative for English text
)

// MaxAnswerSchemaBytes bounds a JSON agent's schema (16 KB).
const MaxAnswerSchemaBytes = 16_000

// Depth of an agent tree: the agents on its longest path of delegate
// capabilities, the task's own included (a coordinator, the researcher
// it delegates to, a reviewer the researcher delegates to: 3). A worker's
// operator bounds it (AGENT_MAX_AGENT_DEPTH) up to MaxAgentDepth.
const (
	DefaultAgentDepth = 3
	MaxAgentDepth     = 8
)
