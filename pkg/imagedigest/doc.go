// Package imagedigest asks an image registry which manifest a tag names, so that an image pinned
// by tag and digest reaches the guests only while its tag still names that digest: a tag pushed
// again with other content in the registry is refused before anything is installed, and the
// running install is left as it is. A read is bounded in time and in what it may make the operator
// hold, and one read serves every guest pass that asks for the same image within a short while.
//
// The registry credentials come from a Docker config (the .dockerconfigjson of the deployment's
// image pull Secret); they are used for that registry only and never appear in a message.
package imagedigest
