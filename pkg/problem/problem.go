// Package problem is the one shape in which every part of the operator says why something cannot
// go on as asked: a CamelCase reason, which becomes a condition's or an Event's reason, and a
// message for the person who can fix it.
package problem

import "fmt"

// Problem is a reason and a message. A nil *Problem means there is none.
type Problem struct {
	Reason  string
	Message string
}

// New returns the problem reason with a formatted message.
func New(reason, format string, args ...any) *Problem {
	return &Problem{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

func (p *Problem) Error() string { return p.Reason + ": " + p.Message }

// In prefixes the message with the object it is about ("HarvesterConfig fleet-default/nc-1").
func (p *Problem) In(object string) *Problem {
	if p == nil {
		return nil
	}
	return &Problem{Reason: p.Reason, Message: object + ": " + p.Message}
}
