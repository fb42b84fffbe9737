package problem

import "testing"

func TestProblem(t *testing.T) {
	p := New("InvalidNetwork", "network %q is not a name", "a b")
	if p.Reason != "InvalidNetwork" || p.Message != `network "a b" is not a name` {
		t.Fatalf("New gave %+v", p)
	}
	if got := p.Error(); got != `InvalidNetwork: network "a b" is not a name` {
		t.Errorf("Error() = %q", got)
	}
	in := p.In("HarvesterConfig fleet-default/nc-1")
	if in.Reason != p.Reason || in.Message != `HarvesterConfig fleet-default/nc-1: network "a b" is not a name` {
		t.Errorf("In gave %+v", in)
	}
	if p.Message != `network "a b" is not a name` {
		t.Errorf("In changed the original: %+v", p)
	}
	var none *Problem
	if none.In("x") != nil {
		t.Error("In of no problem is a problem")
	}
}
