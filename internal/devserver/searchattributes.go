package devserver

import enumspb "go.temporal.io/api/enums/v1"

// SearchAttributes are the project's custom search attributes. Workflows set
// them so tasks can be listed by agent and model.
var SearchAttributes = map[string]enumspb.IndexedValueType{
	"AgentName":  enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	"AgentModel": enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	"AgentState": enumspb.INDEXED_VALUE_TYPE_KEYWORD,
}
