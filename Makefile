# The two commands: `make run` (the product on its embedded dev stack) and
# `make test` (every test). `make bench` measures; it is never part of test.
GO      ?= go
BIN     := $(CURDIR)/bin
ITENV   := AGENTDEV_BIN=$(BIN)/agentdev AGENT_WORKER_BIN=$(BIN)/worker AGENT_STARTER_BIN=$(BIN)/starter AGENT_API_BIN=$(BIN)/api

.PHONY: all build run test test-deps test-postgres postgres check-compose unit vet tools check bench record-histories openapi clean

all: build

# One binary links the Temporal server (agentdev); the worker and starter do not.
build:
	$(GO) build -o $(BIN)/agentdev ./cmd/agentdev
	$(GO) build -o $(BIN)/worker ./cmd/worker
	$(GO) build -o $(BIN)/starter ./cmd/starter
	$(GO) build -o $(BIN)/api ./cmd/api

# Server (SQLite under data/), Web UI on :8233, frontend on :7233, the
# broker (NATS) on :4222, a worker, the Tasks API on :8080 and a demo task.
run: build
	$(BIN)/agentdev run

vet:
	$(GO) vet ./...

# The static checks, pinned, built from the Go module proxy into bin/tools
# (not in go.mod; rebuilt only when missing or of another version).
# staticcheck: every package and its tests, postgres_test.go too (-tags).
# workflowcheck: every workflow (internal/workflows, internal/definitions,
# the bench's) and what it calls must be deterministic: no time.Now,
# goroutines, channels or map ranges whose order shows. A false positive
# takes a //workflowcheck:ignore comment saying why, or, for a function that
# is deterministic wherever it is called, a line in workflowcheck.config.yaml.
TOOLS         := $(BIN)/tools
STATICCHECK   := honnef.co/go/tools/cmd/staticcheck@v0.8.2
WORKFLOWCHECK := go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0

tools:
	@GO=$(GO) scripts/tools.sh $(TOOLS) $(STATICCHECK) $(WORKFLOWCHECK)

# All run, so one pass shows every finding; any one's fails the target.
# go mod tidy -diff: go.mod and go.sum say exactly what the code imports.
check: tools
	@rc=0; \
	echo "go mod tidy -diff"; $(GO) mod tidy -diff || rc=1; \
	echo "staticcheck -tags postgres ./..."; $(TOOLS)/staticcheck -tags postgres ./... || rc=1; \
	echo "workflowcheck -show-pos -config workflowcheck.config.yaml ./..."; $(TOOLS)/workflowcheck -show-pos -config workflowcheck.config.yaml ./... || rc=1; \
	exit $$rc

# Unit, replay, fuzz-corpus and integration tests. The integration package
# starts bin/agentdev once for the whole run. test-deps first: the Web UI
# tests need Debian's headless Chromium; vet and check (staticcheck,
# workflowcheck) before any test runs.
test: test-deps build vet check
	$(ITENV) $(GO) test -count=1 -timeout 45m ./...

# chromium on PATH, else Debian's chromium package installed with apt-get
# (as root, or through sudo; otherwise it fails naming the command); the
# AG-UI client from integration/agui's npm lockfile.
test-deps:
	@scripts/test-deps.sh chromium agui-client mcp-client mcp-everything a2a-client

# docker-compose.yml as the docker-compose CLI reads it (Debian's
# docker-compose package, installed when missing; `config` needs no Docker
# engine), with .env.example as the operator's .env. make test validates it
# too, with compose-go (package deploy).
check-compose:
	@scripts/test-deps.sh docker-compose
	docker-compose --env-file .env.example -f docker-compose.yml config -q
	@echo "check-compose: docker-compose config -q: docker-compose.yml is valid"

# The core integration tests (turns, queued inputs, continue-as-new, a worker
# SIGKILL, list queries) and a server restart with tasks in flight
# (postgres_test.go, built with -tags postgres), the server on PostgreSQL:
# AGENTDEV_PG names a server and a role that may create databases; each run
# gets fresh databases, dropped afterwards. With the default URL, target
# postgres (scripts/postgres.sh) first installs Debian's PostgreSQL when
# missing, starts its cluster and creates the role; with any other URL it
# installs nothing and uses that server.
AGENTDEV_PG_LOCAL := postgres://temporal:temporal@127.0.0.1:5432
AGENTDEV_PG ?= $(AGENTDEV_PG_LOCAL)
PG_TESTS    := TestSecondServiceUsesOnlyTheSDKAndTheNames|TestInputsDuringATurnAreQueuedThenCommittedTogether|TestQueueFullRefusesInputsUntilATurnCommitsThem|TestContinueAsNewKeepsTheListComplete|TestWorkerKilledMidTurnTaskFinishesOnAnother|TestEmbeddedServerServesTheUIAndSearchAttributes|TestSingleModeAndIdleTimeout|TestPostgresServerRestartWithTasksInFlight|TestPostgresHoldsNoPlaintextWithCodecKeys|TestTasksAPI
test-postgres: postgres build
	@db=agenttask_it_$$(date +%s)_$$$$; rc=0; start=$$(date +%s); \
	echo "test-postgres: databases $$db and $${db}_visibility"; \
	AGENTDEV_DB=$(AGENTDEV_PG)/$$db $(ITENV) $(GO) test -count=1 -tags postgres -timeout 15m -v -run '^($(PG_TESTS))$$' ./integration || rc=$$?; \
	echo "test-postgres: $$(( $$(date +%s) - start )) s"; \
	psql "$(AGENTDEV_PG)/postgres" -qc "DROP DATABASE IF EXISTS $$db" -c "DROP DATABASE IF EXISTS $${db}_visibility" || true; \
	exit $$rc

postgres:
ifeq "$(AGENTDEV_PG)" "$(AGENTDEV_PG_LOCAL)"
	@scripts/postgres.sh $(AGENTDEV_PG_LOCAL)
else
	@echo "test-postgres: AGENTDEV_PG is set: using that server, installing nothing"
endif

unit:
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /integration)

bench: build
	$(ITENV) $(GO) run ./internal/bench

# Record the histories the replay test replays into a new generation folder,
# testdata/histories/genN (N one past the highest). Earlier generations are
# never touched: every one must still replay, so a change that breaks tasks
# recorded on an older version fails `make test`.
NEXT_GEN = $(shell n=0; for d in testdata/histories/gen*; do [ -d "$$d" ] && m=$${d##*gen} && [ "$$m" -gt "$$n" ] && n=$$m; done; echo $$((n+1)))
record-histories: build
	@test ! -e testdata/histories/gen$(NEXT_GEN) || { echo "gen$(NEXT_GEN) exists"; exit 1; }
	AGENT_RECORD_HISTORIES=$(CURDIR)/testdata/histories/gen$(NEXT_GEN) $(ITENV) $(GO) test -count=1 -timeout 30m -run 'TestSecond|TestBadStart|TestExposes|TestSingle|TestContinueAsNewKeeps|TestWorkerKilled|TestDelegate|TestFilesTravel|TestShapingAgainst|TestResume|TestRepeatedInputIDs|TestModelRetryTimeout|TestContinuationsNeverCollide|TestMountsComeFrom|TestAsk|TestTasksAPI|TestStream|TestQueueFull|TestStaleCancel|TestLargeState|TestParallelCalls|TestLongAnswer|TestLargeSaved|TestActivityCapability|TestApproval|TestAgentState|TestRescuedTaskAsks|TestCollected|TestTenAsks|TestInputRefusedWhileRestoring|TestAtMostSixteen|TestAskWaitingOnAnApproval|TestMCP|TestDelete|TestStarterDelete|TestRetention|TestDeploy|TestBudgetStops|TestBudgetOnExhausted|TestBudgetCounts|TestBusyConversation|TestRollbackAcross|TestTheFinalAnswer|TestA2ACapability' ./integration

# The Tasks API's OpenAPI description, checked in; a test compares it with
# the one the API serves.
openapi:
	$(GO) run ./cmd/api -openapi > internal/tasksapi/openapi.json

clean:
	rm -rf $(BIN)
