package devserver

import (
	"fmt"
	"time"

	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/membership/static"
	"go.temporal.io/server/common/primitives"
)

const (
	clusterName = "active"
	storeName   = "sqlite-default"
)

// servicePorts are the ports of the four services in this process.
type servicePorts struct {
	frontend, history, matching, worker int
	// frontendHTTP serves the frontend's HTTP API. It is opened, like the
	// CLI does, mainly so the server does not warn about it on every start.
	frontendHTTP int
}

func pickServicePorts(ip string, frontend int) (servicePorts, error) {
	p := servicePorts{}
	var err error
	if p.frontend, err = portOrFree(ip, frontend); err != nil {
		return p, fmt.Errorf("frontend: %w", err)
	}
	// Internal services always take free ports so two dev servers can share
	// a machine.
	for _, port := range []*int{&p.history, &p.matching, &p.worker, &p.frontendHTTP} {
		if *port, err = freePort(ip); err != nil {
			return p, err
		}
	}
	return p, nil
}

// serverConfig mirrors `temporal server start-dev`: one history shard,
// SQLite for both default and visibility stores, no archival, no global
// namespaces.
func serverConfig(ip string, ports servicePorts, sql *config.SQL) *config.Config {
	frontend := hostPort(ip, ports.frontend)
	svc := func(port int) config.Service {
		return config.Service{RPC: config.RPC{GRPCPort: port, BindOnIP: ip}}
	}

	var c config.Config
	c.Global.Membership.MaxJoinDuration = 30 * time.Second
	c.Global.Membership.BroadcastAddress = ip
	c.Persistence.DefaultStore = storeName
	c.Persistence.VisibilityStore = storeName
	c.Persistence.NumHistoryShards = 1
	c.Persistence.DataStores = map[string]config.DataStore{storeName: {SQL: sql}}
	c.ClusterMetadata = &cluster.Config{
		EnableGlobalNamespace:    false,
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			// ClusterID is left empty: the server generates one on first
			// start and keeps the persisted one afterwards.
			clusterName: {
				Enabled:                true,
				InitialFailoverVersion: 1,
				RPCAddress:             frontend,
				HTTPAddress:            hostPort(ip, ports.frontendHTTP),
			},
		},
	}
	c.DCRedirectionPolicy.Policy = "noop"
	frontendSvc := svc(ports.frontend)
	frontendSvc.RPC.HTTPPort = ports.frontendHTTP
	c.Services = map[string]config.Service{
		string(primitives.FrontendService): frontendSvc,
		string(primitives.HistoryService):  svc(ports.history),
		string(primitives.MatchingService): svc(ports.matching),
		string(primitives.WorkerService):   svc(ports.worker),
	}
	c.Archival.History.State = "disabled"
	c.Archival.Visibility.State = "disabled"
	c.NamespaceDefaults.Archival.History.State = "disabled"
	c.NamespaceDefaults.Archival.Visibility.State = "disabled"
	// The worker service's system workflows dial the frontend through this.
	c.PublicClient.HostPort = frontend
	return &c
}

// staticHosts replaces ringpop membership: every service is a single local
// host, so no membership ports are opened.
func staticHosts(ip string, ports servicePorts) map[primitives.ServiceName]static.Hosts {
	return map[primitives.ServiceName]static.Hosts{
		primitives.FrontendService: static.SingleLocalHost(hostPort(ip, ports.frontend)),
		primitives.HistoryService:  static.SingleLocalHost(hostPort(ip, ports.history)),
		primitives.MatchingService: static.SingleLocalHost(hostPort(ip, ports.matching)),
		primitives.WorkerService:   static.SingleLocalHost(hostPort(ip, ports.worker)),
	}
}

// dynamicConfig holds the dev server's overrides: the base below, then the
// profile's settings (profile.go), then extra (--dynamic-config-value).
// Payload, history size and continue-as-new limits are deliberately left at
// the server's defaults so development hits the same limits as production.
func dynamicConfig(profile []Setting, extra map[string]any) dynamicconfig.StaticClient {
	dc := baseDynamicConfig()
	for _, s := range profile {
		dc[dynamicconfig.MakeKey(s.Key)] = s.Value
	}
	for k, v := range extra {
		dc[dynamicconfig.MakeKey(k)] = v
	}
	return dc
}

// baseDynamicConfig is what every profile sets.
func baseDynamicConfig() dynamicconfig.StaticClient {
	return dynamicconfig.StaticClient{
		// Make new search attributes visible at once instead of after the
		// cache's refresh interval, as the CLI dev server does.
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): true,
		// Bypassing that cache costs reads; the CLI raises the persistence
		// QPS limits to compensate, keeping the default ratio between them.
		dynamicconfig.FrontendPersistenceMaxQPS.Key(): 10000,
		dynamicconfig.HistoryPersistenceMaxQPS.Key():  45000,
		// A 128k-entry mutable state cache is sized for production hosts.
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key(): 8096,
		// The UI and listings hit visibility more than the default 10 RPS allows.
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
		// Already the defaults in v1.32; pinned because task updates need them.
		dynamicconfig.FrontendEnableUpdateWorkflowExecution.Key():              true,
		dynamicconfig.FrontendEnableUpdateWorkflowExecutionAsyncAccepted.Key(): true,
		// Worker Deployment Versioning (docs/deploy.md): already the
		// defaults in v1.32, pinned because versioned workers
		// (AGENT_BUILD_ID) need them. The older build-ID APIs
		// (frontend.workerVersioningDataAPIs/RuleAPIs) and the pre-release
		// system.enableDeployments stay off: the runtime uses neither.
		dynamicconfig.EnableDeploymentVersions.Key():                   true,
		dynamicconfig.FrontendEnableWorkerVersioningWorkflowAPIs.Key(): true,
		// A version no longer current reports DRAINED (no open pinned run)
		// within seconds instead of 3+3 minutes, so retiring one can be
		// tried at once in development. Production keeps the defaults,
		// which allow for visibility's lag.
		dynamicconfig.VersionDrainageStatusRefreshInterval.Key():       5 * time.Second,
		dynamicconfig.VersionDrainageStatusVisibilityGracePeriod.Key(): 5 * time.Second,
	}
}
