package broker

import (
	"encoding/json"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// httpHandler serves /metrics, /healthz and the admin API.
func (b *Broker) httpHandler() http.Handler {
	mux := http.NewServeMux()
	auth := b.httpAuth
	if auth == nil { // a broker without an HTTP listener, handler built by a test
		auth = &adminAuth{logger: b.logger.Named("admin")}
	}
	mux.Handle("GET /metrics", auth.guardRead(promhttp.HandlerFor(b.registry, promhttp.HandlerOpts{Registry: b.registry})))
	mux.Handle("GET /healthz", auth.guardRead(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"status": "ok", "cluster_id": b.clusterID, "node_id": b.nodeID})
	})))
	b.adminRoutes(mux, auth)
	return mux
}

// adminRoutes is where the admin API (mirrors, faults) registers; each
// route is authenticated, authorized and logged (httpauth.go).
func (b *Broker) adminRoutes(mux *http.ServeMux, auth *adminAuth) {
	for pattern, h := range b.admin {
		mux.Handle(pattern, auth.guard(pattern, h))
	}
}

// HandleAdmin registers an admin API route; call before Serve.
func (b *Broker) HandleAdmin(pattern string, h http.Handler) {
	if b.admin == nil {
		b.admin = map[string]http.Handler{}
	}
	b.admin[pattern] = h
}
