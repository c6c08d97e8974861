package tasksapi

import (
	"encoding/json"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/catalog"
	"github.com/agenttask/agenttask/internal/taskdef"
	"github.com/agenttask/agenttask/internal/workflows"
)

// A task's worstCase (docs/tasks-api.md#worstcase): the most one run can
// use, counting every byte a run may send as a token. A run is one turn of
// an AgentTask; what the runtime sends for it (internal/activities
// request.go and answer.go):
//
//   - A task with text answers makes one model call, and up to jsonCalls
//     when an answer is over the 100,000-byte inline budget (refused,
//     never split: docs/content.md#content-parts): the model is told so
//     and asked again, the refused answer not re-sent but replaced by a
//     short placeholder
//     (longRefusalBytes with the correction). Its input is the stored base (taskdef.InputTokensWorstCase: the prompt filled with
//     each open variable at its maxBytes, input.maxBytes and
//     history.maxBytes). What a provider adds per message (role tokens) is
//     not counted: a byte counted as a token already counts text three to
//     four times over.
//   - A JSON task adds to the system message the runtime's instruction
//     ("Answer with one JSON object that fits this schema:" and the schema)
//     and sends the schema again as the request's response format. Its
//     answer is checked: one that is not JSON, or not fit for the schema,
//     is sent back with the refusal and the model is asked again, up to
//     jsonCalls calls in all. Call k (1-based) sends the first call's input
//     and, for each refused answer before it, that answer (at most
//     maxTokens tokens, which it was as output) and the refusal (its fixed
//     text and the violations, which name places of the answer and rules
//     of the schema: counted as at most maxTokens + the schema's bytes).
//   - Each call may answer with maxTokens tokens (the model's maximum at most).
//
// A task with capabilities (docs/tasks-api.md#capabilities) may also make
// up to toolRounds model calls that ask for tool calls before those
// above, each answered with maxTokens. Every call of its run may send
// besides: the tool definitions (each capability as the model reads it,
// and an mcp capability's tools at their bound, activities.MaxMCPToolsBytes,
// whatever the server lists) and the turn's tool exchange so far, which the
// runtime bounds (scratchWorstCase). Units are each call's worst case at the catalogue's
// prices, summed. A model call that fails (the provider's outage, a stream
// cut before its end) and is tried again reports no usage of its own; a
// run's usage, and this bound, count the calls that answered.
const (
	// jsonCalls is activities.structuredAttempts: the calls a turn makes
	// to get an answer that fits.
	jsonCalls = 3
	// jsonInstructionBytes covers the runtime's JSON instruction without
	// the schema ("\n\nAnswer with one JSON object that fits this schema:\n").
	jsonInstructionBytes = 64
	// refusalBytes covers the fixed text of a refusal ("Your answer was
	// refused: ", ". Answer again with one JSON object that has every
	// required key and fits the schema.").
	refusalBytes = 160
	// longRefusalBytes covers what a text answer over the inline budget
	// adds to the next call: the placeholder in its place and the
	// correction ("Your answer was refused: it was N bytes, ...";
	// activities longanswer.go), about 400 bytes.
	longRefusalBytes = 512
)

// toolRounds is the most model calls of a turn that ask for tool calls
// (the runtime's bound; one more fails the turn before any tool runs).
const toolRounds = workflows.MaxCapabilityRounds

// toolNoteBytes covers the note that replaces a tool result once the
// exchange is over its bound, or the error the model reads in its place.
const toolNoteBytes = 256

// worstCaseCalls is the most model calls a run of d makes.
func worstCaseCalls(d taskdef.Definition) int {
	calls := jsonCalls // a JSON answer that does not fit, or any answer over the inline budget, is asked again
	if len(d.Capabilities) > 0 {
		calls += toolRounds
	}
	return calls
}

// toolsWorstCase bounds what d's tool definitions add to each call: each
// capability as declared (its name, description and parameters), and an
// mcp capability's tools at the runtime's bound on listed tools.
func toolsWorstCase(d taskdef.Definition) int64 {
	var n int64
	mcp := false
	for _, c := range d.Capabilities {
		b, _ := json.Marshal(c)
		n += int64(len(b))
		mcp = mcp || c.Kind == contract.CapabilityMCP
	}
	if mcp {
		n += activities.MaxMCPToolsBytes // all mcp capabilities' tools together
	}
	return n
}

// scratchWorstCase bounds a turn's tool exchange as a call sends it: the
// runtime stops adding results once it is over workflows.MaxScratchBytes
// (each later result a short note), so it holds at most that, the one
// result that crossed it, and from each round the calls the model asked
// for (its output: at most maxTokens) and a note per call.
func scratchWorstCase(d taskdef.Definition) int64 {
	if len(d.Capabilities) == 0 {
		return 0
	}
	perRound := int64(d.MaxTokens) + contract.MaxCallsPerResponse*toolNoteBytes
	return workflows.MaxScratchBytes + workflows.MaxActivityResultBytes + toolRounds*perRound
}

// callInputs is the most input tokens of each of a run's calls; base is
// the stored taskdef.InputTokensWorstCase.
func callInputs(d taskdef.Definition, base int64) []int64 {
	first := base + toolsWorstCase(d) + scratchWorstCase(d)
	schema := int64(len(d.Schema))
	if d.JSON {
		first += jsonInstructionBytes + 2*schema // in the system message and as the response format
	}
	maxTokens := int64(d.MaxTokens)
	perRefusal := int64(longRefusalBytes) // a text answer over the inline budget
	if d.JSON {
		perRefusal = maxTokens + // the refused answer, re-sent
			refusalBytes + maxTokens + schema // the refusal and its violations
	}
	out := make([]int64, worstCaseCalls(d))
	rounds := len(out) - jsonCalls // tool rounds first, each with the exchange at its bound
	for k := range out {
		out[k] = first + int64(max(k-rounds, 0))*perRefusal
	}
	return out
}

// runWorstCase is the most a run of d can use at m's prices.
func runWorstCase(m catalog.Model, d taskdef.Definition, base int64) catalog.WorstCase {
	var w catalog.WorstCase
	for _, in := range callInputs(d, base) {
		c := m.WorstCase(in, int64(d.MaxTokens))
		w.InputTokens += c.InputTokens
		w.OutputTokens += c.OutputTokens
		w.Units += c.Units
	}
	return w
}

// unpricedWorstCase is runWorstCase's token counts for a model that left
// the catalogue (no prices: no units).
func unpricedWorstCase(d taskdef.Definition, base int64) catalog.WorstCase {
	var w catalog.WorstCase
	for _, in := range callInputs(d, base) {
		w.InputTokens += in
		w.OutputTokens += int64(d.MaxTokens)
	}
	return w
}
