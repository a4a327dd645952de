package adminclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/minibroker/minibroker/internal/fault"
)

// The fault endpoints (internal/broker/faults_http.go), served only by a
// broker with faults.enable and to loopback clients.

// faults is do with the answer of a broker that has no fault endpoints
// (faults.enable off: the route is not served) explained.
func (c *Client) faults(ctx context.Context, method, path string, body, out any) error {
	err := c.do(ctx, method, path, body, out, 0)
	var ae *Error
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound && ae.Plain {
		return fmt.Errorf("the broker at %s has no fault endpoints: start it with --set faults.enable=true", c.base)
	}
	return err
}

// SetFault sets a fault and answers it with its id.
func (c *Client) SetFault(ctx context.Context, spec fault.Spec) (fault.Status, error) {
	var st fault.Status
	return st, c.faults(ctx, "POST", "/v1/faults", spec, &st)
}

// Faults lists the faults set.
func (c *Client) Faults(ctx context.Context) ([]fault.Status, error) {
	var sts []fault.Status
	return sts, c.faults(ctx, "GET", "/v1/faults", nil, &sts)
}

// ClearFault clears one fault.
func (c *Client) ClearFault(ctx context.Context, id string) error {
	var out map[string]string
	return c.faults(ctx, "DELETE", "/v1/faults/"+url.PathEscape(id), nil, &out)
}

// ClearFaults clears every fault and answers how many there were.
func (c *Client) ClearFaults(ctx context.Context) (int, error) {
	var out struct {
		Cleared int `json:"cleared"`
	}
	err := c.faults(ctx, "DELETE", "/v1/faults", nil, &out)
	return out.Cleared, err
}
