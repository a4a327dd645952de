package mirror

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Admin HTTP API (JSON), served on the broker's HTTP listener:
//
//	POST   /v1/mirrors                      {"name","source":[…],"client_id","config":{…},"source_config":{…},"no_check"} → Status
//	                                        (checks the source first unless no_check)
//	GET    /v1/mirrors                      → ["name", …]
//	GET    /v1/mirrors?view=summary         → [Summary, …] (`mirror list`: topics, source cluster id, bootstrap)
//	GET    /v1/mirrors/{name}               → Status
//	GET    /v1/mirrors/{name}/plan?topics=a,b → Plan (the dry run of stop; read-only)
//	DELETE /v1/mirrors/{name}
//	PUT    /v1/mirrors/{name}/source-config {"source_config":{…}} → Status (replaces them all, reconnects)
//	PUT    /v1/mirrors/{name}/config        {"config":{…},"reset":[…]} → Status (changes those named)
//	POST   /v1/mirrors/{name}/start         {"topics":[…],"allow_truncate","dry_run"} → Status with "start": StartReport
//	                                        (dry_run → StartReport; data to cut without allow_truncate → 409 {"error","report"})
//	POST   /v1/mirrors/{name}/stop          {"topics":[…]} | {"all_topics":true}, "wait", "timeout_ms" → Status with "stop": StopResult
//	                                        (failover: answers once STOPPING is persisted, the steps running on;
//	                                        with wait, once every partition is STOPPED, else 500 (a step failed)
//	                                        or 504 (timeout) {"error","stop"})
//	POST   /v1/mirrors/{name}/pause         {"topics":[…]}
//	POST   /v1/mirrors/{name}/resume        {"topics":[…]}
//
// start, stop, pause and resume also take "topic_patterns": [regexp, …]
// (topicmatch.go), and start "exclude": [regexp, …]; the topics they
// select join "topics", and the answer's "match" says which they were.
//
// Errors answer {"error": "…"} with 400, 404 or 409.

// CreateRequest is the body of POST /v1/mirrors.
type CreateRequest struct {
	Name     string   `json:"name"`
	Source   []string `json:"source"`
	ClientID string   `json:"client_id,omitempty"`
	// Config is the mirror's settings by KIP-1279's names
	// (mirror.topics.include, …); unknown names and bad values answer 400.
	Config        map[string]string `json:"config,omitempty"`
	GroupsInclude []string          `json:"groups_include,omitempty"`
	GroupsExclude []string          `json:"groups_exclude,omitempty"`
	// NoCheck skips the source check (ApiVersions and cluster id) that
	// create makes by default.
	NoCheck bool `json:"no_check,omitempty"`
	// SourceConfig is the source client's security settings, by Kafka's
	// client names (security.protocol, sasl.mechanism, sasl.jaas.config,
	// ssl.truststore.location, …). Secrets in it are never sent back.
	SourceConfig map[string]string `json:"source_config,omitempty"`
}

// SourceConfigRequest is the body of PUT /v1/mirrors/{name}/source-config.
type SourceConfigRequest struct {
	SourceConfig map[string]string `json:"source_config"`
}

// ConfigRequest is the body of PUT /v1/mirrors/{name}/config: Config's
// settings take the values given, Reset's go back to their default, the
// others are unchanged.
type ConfigRequest struct {
	Config map[string]string `json:"config,omitempty"`
	Reset  []string          `json:"reset,omitempty"`
}

// TopicsRequest is the body of start/stop/pause/resume.
type TopicsRequest struct {
	Topics []string `json:"topics"`
	// TopicPatterns are anchored regular expressions resolved to topics
	// when the request comes (topicmatch.go); they add to Topics.
	// Exclude (start only) removes the topics its patterns match from
	// both.
	TopicPatterns []string `json:"topic_patterns,omitempty"`
	Exclude       []string `json:"exclude,omitempty"`
	// AllowTruncate and DryRun are start's (StartOptions); the other
	// actions refuse them.
	AllowTruncate bool `json:"allow_truncate,omitempty"`
	DryRun        bool `json:"dry_run,omitempty"`
	// AllTopics, Wait and TimeoutMs are stop's: a stop names its topics
	// or says all_topics (never all by omission); with Wait it answers
	// when every partition of them is STOPPED, or when the steps failed,
	// or after TimeoutMs (default 60000).
	AllTopics bool  `json:"all_topics,omitempty"`
	Wait      bool  `json:"wait,omitempty"`
	TimeoutMs int64 `json:"timeout_ms,omitempty"`
}

// defaultStopWait bounds a stop's wait when the request gives none.
const defaultStopWait = time.Minute

// Routes registers the admin API on mux.
func (m *Manager) Routes(handle func(pattern string, h http.Handler)) {
	handle("POST /v1/mirrors", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req CreateRequest
		if !decode(w, r, &req) {
			return
		}
		err := m.CreateWith(req.Name, req.Source, CreateOptions{ClientID: req.ClientID, Config: req.Config,
			GroupsInclude: req.GroupsInclude, GroupsExclude: req.GroupsExclude, CheckSource: !req.NoCheck,
			SourceConfig: req.SourceConfig})
		if err != nil {
			reply(w, err, nil)
			return
		}
		st, err := m.Describe(req.Name)
		reply(w, err, st)
	}))
	handle("GET /v1/mirrors", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch view := r.URL.Query().Get("view"); view {
		case "":
			reply(w, nil, m.Names())
		case "summary":
			reply(w, nil, m.List())
		default:
			writeErr(w, http.StatusBadRequest, "unknown view "+view+" (summary, or none for the names)")
		}
	}))
	handle("GET /v1/mirrors/{name}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st, err := m.Describe(r.PathValue("name"))
		reply(w, err, st)
	}))
	handle("GET /v1/mirrors/{name}/plan", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pl, err := m.planRequest(r.Context(), r.PathValue("name"), r.URL.Query())
		reply(w, err, pl)
	}))
	handle("DELETE /v1/mirrors/{name}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reply(w, m.Delete(r.PathValue("name")), map[string]string{"deleted": r.PathValue("name")})
	}))
	handle("PUT /v1/mirrors/{name}/source-config", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req SourceConfigRequest
		if !decode(w, r, &req) {
			return
		}
		name := r.PathValue("name")
		if err := m.AlterSourceConfig(name, req.SourceConfig); err != nil {
			reply(w, err, nil)
			return
		}
		st, err := m.Describe(name)
		reply(w, err, st)
	}))
	handle("PUT /v1/mirrors/{name}/config", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req ConfigRequest
		if !decode(w, r, &req) {
			return
		}
		name := r.PathValue("name")
		if err := m.AlterSettings(name, req.Config, req.Reset); err != nil {
			reply(w, err, nil)
			return
		}
		st, err := m.Describe(name)
		reply(w, err, st)
	}))
	handle("POST /v1/mirrors/{name}/{action}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req TopicsRequest
		if !decode(w, r, &req) {
			return
		}
		name := r.PathValue("name")
		action := r.PathValue("action")
		if action != "start" && (req.AllowTruncate || req.DryRun) {
			writeErr(w, http.StatusBadRequest, "allow_truncate and dry_run are start's")
			return
		}
		if action != "stop" && (req.AllTopics || req.Wait || req.TimeoutMs != 0) {
			writeErr(w, http.StatusBadRequest, "all_topics, wait and timeout_ms are stop's")
			return
		}
		match, ok := m.matchRequest(w, r, name, action, &req)
		if !ok {
			return
		}
		var err error
		var rep StartReport
		switch action {
		case "start":
			rep, err = m.StartWith(r.Context(), name, req.Topics, StartOptions{AllowTruncate: req.AllowTruncate, DryRun: req.DryRun})
			rep.Match = match
			var refused *TruncateRefusedError
			if errors.As(err, &refused) {
				refused.Report.Match = match
			}
			if err == nil && req.DryRun {
				reply(w, nil, rep)
				return
			}
		case "stop":
			m.serveStop(w, r, name, req, match)
			return
		case "pause":
			err = m.Pause(name, req.Topics)
		case "resume":
			err = m.Resume(name, req.Topics)
		default:
			writeErr(w, http.StatusNotFound, "unknown action "+r.PathValue("action"))
			return
		}
		if err != nil {
			reply(w, err, nil)
			return
		}
		st, err := m.Describe(name)
		if action == "start" {
			st.Start = &rep
		}
		st.Match = match
		reply(w, err, st)
	}))
}

// matchRequest resolves a request's topic patterns into its topics
// (topicmatch.go) and applies start's exclude; it answers the error
// itself when it fails (ok false).
func (m *Manager) matchRequest(w http.ResponseWriter, r *http.Request, name, action string, req *TopicsRequest) (match *TopicMatch, ok bool) {
	switch {
	case len(req.Exclude) > 0 && action != "start":
		writeErr(w, http.StatusBadRequest, "exclude is start's")
		return nil, false
	case len(req.Exclude) > 0 && len(req.Topics) == 0 && len(req.TopicPatterns) == 0:
		writeErr(w, http.StatusBadRequest, "exclude needs topics or topic_patterns (a start without topics follows "+
			SettingTopicsInclude+" and "+SettingTopicsExclude+")")
		return nil, false
	case len(req.TopicPatterns) > 0 && req.AllTopics:
		writeErr(w, http.StatusBadRequest, "topic_patterns and all_topics are exclusive")
		return nil, false
	}
	topics, err := ExcludeTopics(req.Topics, req.Exclude)
	if err != nil {
		reply(w, err, nil)
		return nil, false
	}
	if len(req.TopicPatterns) > 0 {
		tm, err := m.MatchTopics(r.Context(), name, action, req.TopicPatterns, req.Exclude)
		if err != nil {
			reply(w, err, nil)
			return nil, false
		}
		match = &tm
		for _, t := range tm.Matched {
			if !slices.Contains(topics, t) {
				topics = append(topics, t)
			}
		}
	}
	if len(topics) == 0 && (len(req.Topics) > 0 || len(req.TopicPatterns) > 0) {
		// Never "every topic" by omission: what was named was excluded.
		writeErr(w, http.StatusBadRequest, "exclude removes every topic named")
		return nil, false
	}
	req.Topics = topics
	return match, true
}

// serveStop begins a failover and answers at once, or with wait when it
// is over (or the timeout passed): the mirror's status with the stop's
// result. A wait that ends with partitions not STOPPED answers 500 (the
// steps failed) or 504 (the timeout), with the result in the body.
func (m *Manager) serveStop(w http.ResponseWriter, r *http.Request, name string, req TopicsRequest, match *TopicMatch) {
	switch {
	case len(req.Topics) == 0 && !req.AllTopics:
		writeErr(w, http.StatusBadRequest, "name the topics to fail over, or all_topics")
		return
	case len(req.Topics) > 0 && req.AllTopics:
		writeErr(w, http.StatusBadRequest, "topics and all_topics are exclusive")
		return
	case req.TimeoutMs < 0:
		writeErr(w, http.StatusBadRequest, "timeout_ms must not be negative")
		return
	}
	run, err := m.BeginStop(name, req.Topics)
	if err != nil {
		reply(w, err, nil)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	if req.Wait {
		wait := defaultStopWait
		if req.TimeoutMs > 0 {
			wait = time.Duration(req.TimeoutMs) * time.Millisecond
		}
		ctx, cancel = context.WithTimeout(r.Context(), wait)
	} else {
		cancel() // report the states as they are now
	}
	res := run.Wait(ctx)
	cancel()
	if req.Wait && len(res.NotStopped) > 0 {
		code, msg := http.StatusInternalServerError, "failover: "+cmp.Or(res.Error, "incomplete")
		if !res.Waited {
			code, msg = http.StatusGatewayTimeout, "failover: timed out waiting for STOPPED (the steps go on)"
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(map[string]any{"error": fmt.Sprintf("%s; %d of %d partitions not STOPPED", msg, len(res.NotStopped), res.Partitions), "stop": res})
		return
	}
	st, err := m.Describe(name)
	st.Stop = &res
	st.Match = match
	reply(w, err, st)
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeErr(w, http.StatusBadRequest, "bad JSON body: "+err.Error())
		return false
	}
	return true
}

func reply(w http.ResponseWriter, err error, v any) {
	if err != nil {
		code := http.StatusInternalServerError
		switch {
		case errors.Is(err, ErrNotFound):
			code = http.StatusNotFound
		case errors.Is(err, ErrExists), errors.Is(err, ErrActive), errors.Is(err, ErrRefused):
			code = http.StatusConflict
		case errors.Is(err, ErrBadRequest):
			code = http.StatusBadRequest
		case strings.Contains(err.Error(), "source"):
			code = http.StatusBadGateway
		}
		var refused *TruncateRefusedError
		if errors.As(err, &refused) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			json.NewEncoder(w).Encode(map[string]any{"error": err.Error(), "report": refused.Report})
			return
		}
		writeErr(w, code, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
