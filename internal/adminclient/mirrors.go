package adminclient

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/minibroker/minibroker/internal/mirror"
)

// The mirrors' endpoints (internal/mirror/admin.go lists them).

func mirrorPath(name string, rest ...string) string {
	return "/v1/mirrors/" + url.PathEscape(name) + strings.Join(rest, "")
}

// MirrorNames lists the mirrors' names (GET /v1/mirrors).
func (c *Client) MirrorNames(ctx context.Context) ([]string, error) {
	var names []string
	return names, c.do(ctx, "GET", "/v1/mirrors", nil, &names, 0)
}

// ListMirrors summarises every mirror: its topics, the source's cluster
// id and bootstrap servers (GET /v1/mirrors?view=summary).
func (c *Client) ListMirrors(ctx context.Context) ([]mirror.Summary, error) {
	var out []mirror.Summary
	return out, c.do(ctx, "GET", "/v1/mirrors?view=summary", nil, &out, 0)
}

// DescribeMirror is a mirror's status, per partition.
func (c *Client) DescribeMirror(ctx context.Context, name string) (mirror.Status, error) {
	var st mirror.Status
	return st, c.do(ctx, "GET", mirrorPath(name), nil, &st, 0)
}

// CreateMirror defines a mirror (the broker checks the source first
// unless req.NoCheck).
func (c *Client) CreateMirror(ctx context.Context, req mirror.CreateRequest) (mirror.Status, error) {
	var st mirror.Status
	return st, c.do(ctx, "POST", "/v1/mirrors", req, &st, 0)
}

// DeleteMirror deletes a mirror whose partitions are all stopped or
// failed.
func (c *Client) DeleteMirror(ctx context.Context, name string) error {
	var out map[string]string
	return c.do(ctx, "DELETE", mirrorPath(name), nil, &out, 0)
}

// AlterMirrorConfig changes the mirror settings named (PUT …/config).
func (c *Client) AlterMirrorConfig(ctx context.Context, name string, req mirror.ConfigRequest) (mirror.Status, error) {
	var st mirror.Status
	return st, c.do(ctx, "PUT", mirrorPath(name, "/config"), req, &st, 0)
}

// AlterSourceConfig replaces the source's security settings and
// reconnects (PUT …/source-config).
func (c *Client) AlterSourceConfig(ctx context.Context, name string, req mirror.SourceConfigRequest) (mirror.Status, error) {
	var st mirror.Status
	return st, c.do(ctx, "PUT", mirrorPath(name, "/source-config"), req, &st, 0)
}

// TruncateRefusedError is a start the broker refused because it would cut
// local data without AllowTruncate (HTTP 409), with the start's report.
type TruncateRefusedError struct {
	Err    *Error
	Report mirror.StartReport
}

func (e *TruncateRefusedError) Error() string { return e.Err.Error() }
func (e *TruncateRefusedError) Unwrap() error { return e.Err }

// StartMirror starts mirroring topics. A start refused because it would
// cut local data answers a *TruncateRefusedError. With req.DryRun use
// StartMirrorDryRun.
func (c *Client) StartMirror(ctx context.Context, name string, req mirror.TopicsRequest) (mirror.Status, error) {
	var st mirror.Status
	err := c.do(ctx, "POST", mirrorPath(name, "/start"), req, &st, 0)
	var ae *Error
	if errors.As(err, &ae) && ae.Status == http.StatusConflict {
		var body struct {
			Report *mirror.StartReport `json:"report"`
		}
		if json.Unmarshal(ae.Body, &body) == nil && body.Report != nil {
			return st, &TruncateRefusedError{Err: ae, Report: *body.Report}
		}
	}
	return st, err
}

// StartMirrorDryRun is what a start would cut, changing nothing.
func (c *Client) StartMirrorDryRun(ctx context.Context, name string, req mirror.TopicsRequest) (mirror.StartReport, error) {
	req.DryRun = true
	var rep mirror.StartReport
	return rep, c.do(ctx, "POST", mirrorPath(name, "/start"), req, &rep, 0)
}

// StopIncompleteError is a stop with Wait that ended with partitions not
// STOPPED: a step failed (HTTP 500) or the wait timed out (504, the
// steps going on).
type StopIncompleteError struct {
	Err  *Error
	Stop mirror.StopResult
}

func (e *StopIncompleteError) Error() string { return e.Err.Error() }
func (e *StopIncompleteError) Unwrap() error { return e.Err }

// StopMirror fails over topics (req.Topics, req.TopicPatterns or
// req.AllTopics). With req.Wait the request lasts up to req.TimeoutMs
// (the broker's default, a minute, when 0) beyond the client's timeout,
// and a wait that ends with partitions not STOPPED answers a
// *StopIncompleteError.
func (c *Client) StopMirror(ctx context.Context, name string, req mirror.TopicsRequest) (mirror.Status, error) {
	var extra time.Duration
	if req.Wait {
		extra = time.Minute + time.Duration(req.TimeoutMs)*time.Millisecond
	}
	var st mirror.Status
	err := c.do(ctx, "POST", mirrorPath(name, "/stop"), req, &st, extra)
	var ae *Error
	if errors.As(err, &ae) && (ae.Status == http.StatusInternalServerError || ae.Status == http.StatusGatewayTimeout) {
		var body struct {
			Stop *mirror.StopResult `json:"stop"`
		}
		if json.Unmarshal(ae.Body, &body) == nil && body.Stop != nil {
			return st, &StopIncompleteError{Err: ae, Stop: *body.Stop}
		}
	}
	return st, err
}

// PauseMirror pauses fetching for topics (all of the mirror's when
// req names none); it returns when nothing more is appended.
func (c *Client) PauseMirror(ctx context.Context, name string, req mirror.TopicsRequest) (mirror.Status, error) {
	var st mirror.Status
	return st, c.do(ctx, "POST", mirrorPath(name, "/pause"), req, &st, 0)
}

// ResumeMirror resumes fetching for paused topics.
func (c *Client) ResumeMirror(ctx context.Context, name string, req mirror.TopicsRequest) (mirror.Status, error) {
	var st mirror.Status
	return st, c.do(ctx, "POST", mirrorPath(name, "/resume"), req, &st, 0)
}

// PlanMirror is the dry run of a stop of topics (all of the mirror's
// when none).
func (c *Client) PlanMirror(ctx context.Context, name string, topics []string) (mirror.Plan, error) {
	return c.PlanMirrorTopics(ctx, name, mirror.TopicsRequest{Topics: topics})
}

// PlanMirrorTopics is the dry run of a stop of req.Topics and the topics
// of the mirror req.TopicPatterns match (as a stop resolves them; the
// plan's Match says what they matched); all of the mirror's when req
// names none. Only Topics and TopicPatterns are read.
func (c *Client) PlanMirrorTopics(ctx context.Context, name string, req mirror.TopicsRequest) (mirror.Plan, error) {
	q := url.Values{"topics": {strings.Join(req.Topics, ",")}}
	if len(req.TopicPatterns) > 0 {
		q["topic_pattern"] = req.TopicPatterns
	}
	var pl mirror.Plan
	return pl, c.do(ctx, "GET", mirrorPath(name, "/plan?"+q.Encode()), nil, &pl, 0)
}
