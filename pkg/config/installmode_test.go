package config

import (
	"strings"
	"testing"
)

// TestInstallModeTypoAtStartUp: at start-up the previous configuration is the default
// (clusterlabel); a typo used to fall back to it, installing into every labelled cluster. The
// narrowest mode applies instead, and the problem says so.
func TestInstallModeTypoAtStartUp(t *testing.T) {
	t.Parallel()
	for _, typo := range []string{"disable", "Disabeld", "none", "off"} { //nolint:misspell // the misspelt mode is the input under test
		got, problems := Parse(map[string]string{KeyKubevipGuestInstall: typo}, Default())
		if got.KubevipGuestInstall != InstallDisabled {
			t.Errorf("%q at start-up gives %s", typo, got.KubevipGuestInstall)
		}
		if len(problems) != 1 || problems[0].Key != KeyKubevipGuestInstall || problems[0].Reason != ProblemInvalidValue ||
			!strings.Contains(problems[0].Fallback, "disabled until it is fixed") {
			t.Errorf("%q: problems %+v", typo, problems)
		}
	}
}
