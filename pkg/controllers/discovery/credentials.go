package discovery

import "time"

// credentialReuse is how long the Harvester cluster id read from a cloud credential serves the
// other clusters of that credential. Clusters are created in batches with one credential (the
// Harvester cluster they run on); sharing the read saves the API server a GET per cluster, a
// third of discovery's requests in a backlog. Credentials are not watched, so a change to one
// was only ever seen by the clusters that passed after it: a few seconds more change nothing.
// Only the Harvester cluster id is kept, never the Secret: it holds a kubeconfig.
const credentialReuse = 5 * time.Second
