package broker

// The fault endpoints of the HTTP admin API, registered only when
// faults.enable is on (otherwise they do not exist: 404):
//
//	POST   /v1/faults        fault.Spec       → fault.Status (201)
//	GET    /v1/faults                         → [fault.Status, …]
//	GET    /v1/faults/{id}                    → fault.Status
//	DELETE /v1/faults/{id}                    → {"cleared": id}
//	DELETE /v1/faults                         → {"cleared": n}
//
// They answer loopback clients only (403 otherwise), whatever address the
// HTTP listener is bound to: a fault is a test's tool, never a remote
// operator's. Errors answer {"error": "…"} with 400, 403 or 404.

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"

	"github.com/minibroker/minibroker/internal/fault"
)

func (b *Broker) faultRoutes() {
	for pattern, h := range b.faultHandlers() {
		b.HandleAdmin(pattern, loopbackOnly(h))
	}
}

// loopbackOnly answers 403 to a client that is not on a loopback address.
func loopbackOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			faultReply(w, http.StatusForbidden, map[string]string{"error": "fault endpoints answer loopback clients only"})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// faultHandlers are the fault endpoints, by route, before loopbackOnly.
func (b *Broker) faultHandlers() map[string]http.Handler {
	return map[string]http.Handler{
		"POST /v1/faults": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var spec fault.Spec
			dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&spec); err != nil {
				faultReply(w, http.StatusBadRequest, map[string]string{"error": "bad fault: " + err.Error()})
				return
			}
			st, err := b.faults.Set(spec)
			if err != nil {
				faultReply(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
				return
			}
			faultReply(w, http.StatusCreated, st)
		}),
		"GET /v1/faults": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			faultReply(w, http.StatusOK, b.faults.List())
		}),
		"GET /v1/faults/{id}": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			st, ok := b.faults.Get(r.PathValue("id"))
			if !ok {
				faultReply(w, http.StatusNotFound, map[string]string{"error": "no fault " + r.PathValue("id")})
				return
			}
			faultReply(w, http.StatusOK, st)
		}),
		"DELETE /v1/faults/{id}": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := b.faults.Clear(r.PathValue("id")); err != nil {
				code := http.StatusBadRequest
				if errors.Is(err, fault.ErrNotFound) {
					code = http.StatusNotFound
				}
				faultReply(w, code, map[string]string{"error": err.Error()})
				return
			}
			faultReply(w, http.StatusOK, map[string]string{"cleared": r.PathValue("id")})
		}),
		"DELETE /v1/faults": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			faultReply(w, http.StatusOK, map[string]int{"cleared": b.faults.ClearAll()})
		}),
	}
}

func faultReply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
