package controllers

import (
	"context"
	"reflect"
	"testing"
)

// TestOnStartRunsInOrder: what the controllers hand to OnStart runs once, in the order given, only
// when Start is called.
func TestOnStartRunsInOrder(t *testing.T) {
	var c Context
	var ran []string
	c.OnStart(func(context.Context) { ran = append(ran, "guest workers") })
	c.OnStart(func(context.Context) { ran = append(ran, "second") })
	if len(ran) != 0 {
		t.Fatalf("ran before Start: %v", ran)
	}
	c.Start(context.Background())
	if want := []string{"guest workers", "second"}; !reflect.DeepEqual(ran, want) {
		t.Fatalf("ran %v, want %v", ran, want)
	}
}
