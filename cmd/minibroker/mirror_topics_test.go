package main

import (
	"slices"
	"testing"
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
