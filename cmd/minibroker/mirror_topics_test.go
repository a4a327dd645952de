package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/minibroker/minibroker/internal/adminclient"
	"github.com/minibroker/minibroker/internal/mirror"
)

// --topics items that are legal topic names are names (matched exactly,
// "a.b" never "aXb"); any other item is a pattern; a comma inside (),
// [] or {} does not split; --exclude items are patterns.
func TestTopicFlagsRequest(t *testing.T) {
	tf := topicFlags{
		topics:  []string{"orders,a.b", "orders-[0-9]{1,2}", " payments_v2 , (a.b)", "x|y", `orders\.v1`, ".", ""},
		exclude: []string{"orders-tmp,orders-[a-z]{2,3}"},
	}
	req := tf.request()
	if want := []string{"orders", "a.b", "payments_v2"}; !slices.Equal(req.Topics, want) {
		t.Errorf("names %q, want %q", req.Topics, want)
	}
	if want := []string{"orders-[0-9]{1,2}", "(a.b)", "x|y", `orders\.v1`, "."}; !slices.Equal(req.TopicPatterns, want) {
		t.Errorf("patterns %q, want %q", req.TopicPatterns, want)
	}
	if want := []string{"orders-tmp", "orders-[a-z]{2,3}"}; !slices.Equal(req.Exclude, want) {
		t.Errorf("exclude %q, want %q", req.Exclude, want)
	}
	if !tf.given() || (&topicFlags{topics: []string{" , "}}).given() {
		t.Error("given: an empty --topics names nothing")
	}
}

// The drill's --topics patterns are resolved once, on B, by the plan
// endpoint (each pattern a topic_pattern of its own, so a comma inside
// {} is kept): the canary, the plan and the stop then cover the names
// given and the topics matched; names alone ask nothing.
func TestDrillTopicsResolvesPatterns(t *testing.T) {
	var asked url.Values
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/mirrors/from-a/plan" {
			http.NotFound(w, r)
			return
		}
		asked = r.URL.Query()
		json.NewEncoder(w).Encode(mirror.Plan{Mirror: "from-a", Match: &mirror.TopicMatch{
			Patterns: asked["topic_pattern"], Matched: []string{"orders-1", "orders-22"}}})
	}))
	defer srv.Close()
	c := adminclient.New(adminclient.Options{Addr: srv.URL})
	tf := topicFlags{topics: []string{"payments,orders-1", "orders-[0-9]{1,2}"}}
	topics, note, err := drillTopics(context.Background(), c, "from-a", tf.request())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"payments", "orders-1", "orders-22"}; !slices.Equal(topics, want) {
		t.Errorf("topics %q, want %q", topics, want)
	}
	if !slices.Equal(asked["topic_pattern"], []string{"orders-[0-9]{1,2}"}) || asked.Get("topics") != "" {
		t.Errorf("plan asked with %v", asked)
	}
	if !strings.Contains(note, "topics matched  orders-1,orders-22  (patterns orders-[0-9]{1,2})") {
		t.Errorf("note %q", note)
	}
	asked = nil
	if topics, _, err := drillTopics(context.Background(), c, "from-a", (&topicFlags{topics: []string{"a.b"}}).request()); err != nil ||
		!slices.Equal(topics, []string{"a.b"}) || asked != nil {
		t.Errorf("names only: %q %v, asked %v", topics, err, asked)
	}
}
