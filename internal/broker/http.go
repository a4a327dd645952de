package broker

import (
	"encoding/json"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// httpHandler serves /metrics, /healthz and the admin API.
func (b *Broker) httpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(b.registry, promhttp.HandlerOpts{Registry: b.registry}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"status": "ok", "cluster_id": b.clusterID, "node_id": b.nodeID})
	})
	b.adminRoutes(mux)
	return mux
}

// adminRoutes is where the admin API (mirrors) registers; AdminHandler
// lets other packages add routes before Serve.
func (b *Broker) adminRoutes(mux *http.ServeMux) {
	for pattern, h := range b.admin {
		mux.Handle(pattern, h)
	}
}

// HandleAdmin registers an admin API route; call before Serve.
func (b *Broker) HandleAdmin(pattern string, h http.Handler) {
	if b.admin == nil {
		b.admin = map[string]http.Handler{}
	}
	b.admin[pattern] = h
}
