package guest

import "encoding/json"

// normalize gives values a canonical form (what a JSON round trip makes of them), so that values
// parsed from YAML compare equal to the same values read back from a Helm release.
func normalize(v map[string]interface{}) map[string]interface{} {
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	out := map[string]interface{}{}
	if err := json.Unmarshal(data, &out); err != nil {
		return v
	}
	return out
}
