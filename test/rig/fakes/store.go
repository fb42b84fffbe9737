// Package fakes is one set of in-memory stand-ins for the generated controllers the operator's
// handlers read and write: an API server and its informer cache of one kind in a map, with the
// writes recorded for the tests to assert on. The cache shows every write at once. Handlers,
// watches and informers are not served: unit tests call the handlers themselves.
package fakes

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/rancher/wrangler/v2/pkg/generic"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Object is what every kind the fakes hold is: a generated API type that copies itself.
type Object[T any] interface {
	generic.RuntimeMetaObject
	DeepCopy() T
}

// Store is the objects of one kind, as the API server and an always-current cache hold them,
// with what the handlers did to them.
type Store[T Object[T]] struct {
	resource schema.GroupResource

	mu       sync.Mutex
	objects  map[string]T
	serial   int
	indexers map[string]generic.Indexer[T]

	// Written are the objects as each status write stored them, Updated as each other update
	// did, in order.
	Written []T
	Updated []T
	// Enqueued are the keys handed to Enqueue or EnqueueAfter, Delays the durations of
	// EnqueueAfter, in order.
	Enqueued []string
	Delays   []time.Duration

	// Before, when set, runs first in every write (Create, Update, UpdateStatus, Delete), with
	// the verb and the object (a Delete's holds only its namespace and name); an error it
	// returns is the write's, and nothing is stored.
	Before func(verb string, obj T) error
}

// NewStore returns a store of resource holding objs.
func NewStore[T Object[T]](resource schema.GroupResource, objs ...T) *Store[T] {
	s := &Store[T]{resource: resource, objects: map[string]T{}, indexers: map[string]generic.Indexer[T]{}}
	for _, o := range objs {
		s.Add(o)
	}
	return s
}

func key(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// Add stores o as it is, keeping its resourceVersion when it has one.
func (s *Store[T]) Add(o T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o = o.DeepCopy()
	if rv, err := strconv.Atoi(o.GetResourceVersion()); err == nil {
		s.serial = max(s.serial, rv)
	} else {
		s.serial++
		o.SetResourceVersion(strconv.Itoa(s.serial))
	}
	s.objects[key(o.GetNamespace(), o.GetName())] = o
}

// Edit changes the stored object namespace/name with fn, as another writer would, and gives it a
// new resourceVersion. It returns NotFound when there is no such object.
func (s *Store[T]) Edit(namespace, name string, fn func(T)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objects[key(namespace, name)]
	if !ok {
		return s.notFound(name)
	}
	o = o.DeepCopy()
	fn(o)
	s.stamp(o)
	return nil
}

// Objects returns copies of every object, ordered by namespace and name.
func (s *Store[T]) Objects() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.objects))
	for k := range s.objects {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]T, 0, len(keys))
	for _, k := range keys {
		out = append(out, s.objects[k].DeepCopy())
	}
	return out
}

func (s *Store[T]) notFound(name string) error { return apierrors.NewNotFound(s.resource, name) }

func (s *Store[T]) before(verb string, o T) error {
	if s.Before == nil {
		return nil
	}
	return s.Before(verb, o)
}

// stamp gives o the next resourceVersion and stores a copy.
func (s *Store[T]) stamp(o T) T {
	s.serial++
	o.SetResourceVersion(strconv.Itoa(s.serial))
	s.objects[key(o.GetNamespace(), o.GetName())] = o.DeepCopy()
	return o
}

func (s *Store[T]) create(o T) (T, error) {
	var zero T
	if err := s.before("create", o); err != nil {
		return zero, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(o.GetNamespace(), o.GetName())
	if _, ok := s.objects[k]; ok {
		return zero, apierrors.NewAlreadyExists(s.resource, o.GetName())
	}
	o = o.DeepCopy()
	if o.GetUID() == "" {
		o.SetUID(types.UID(fmt.Sprintf("%s-uid-%d", o.GetName(), s.serial+1)))
	}
	o.SetGeneration(1)
	if created := o.GetCreationTimestamp(); created.IsZero() {
		// A clock of the store's own: the serial as seconds since the epoch, so that creation
		// order is the timestamps' order and every object is older than any grace period.
		o.SetCreationTimestamp(metav1.NewTime(time.Unix(int64(s.serial+1), 0)))
	}
	return s.stamp(o), nil
}

// write is an update (status or not): refused with a conflict when o carries a resourceVersion
// that is not the stored one.
func (s *Store[T]) write(verb string, o T) (T, error) {
	var zero T
	if err := s.before(verb, o); err != nil {
		return zero, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	stored, ok := s.objects[key(o.GetNamespace(), o.GetName())]
	if !ok {
		return zero, s.notFound(o.GetName())
	}
	if rv := o.GetResourceVersion(); rv != "" && rv != stored.GetResourceVersion() {
		return zero, apierrors.NewConflict(s.resource, o.GetName(), fmt.Errorf("resourceVersion %s is not the stored %s", rv, stored.GetResourceVersion()))
	}
	o = o.DeepCopy()
	o.SetUID(stored.GetUID())
	o.SetCreationTimestamp(stored.GetCreationTimestamp())
	if verb == "update" {
		o.SetGeneration(stored.GetGeneration() + 1)
	}
	o = s.stamp(o)
	if verb == "update" {
		s.Updated = append(s.Updated, o.DeepCopy())
	} else {
		s.Written = append(s.Written, o.DeepCopy())
	}
	return o, nil
}

func (s *Store[T]) delete(namespace, name string, opts *metav1.DeleteOptions) error {
	if stored, err := s.get(namespace, name); err == nil {
		if err := s.before("delete", stored); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	stored, ok := s.objects[key(namespace, name)]
	if !ok {
		return s.notFound(name)
	}
	if opts != nil && opts.Preconditions != nil {
		pre := opts.Preconditions
		if (pre.UID != nil && *pre.UID != stored.GetUID()) || (pre.ResourceVersion != nil && *pre.ResourceVersion != stored.GetResourceVersion()) {
			return apierrors.NewConflict(s.resource, name, fmt.Errorf("precondition failed"))
		}
	}
	delete(s.objects, key(namespace, name))
	return nil
}

func (s *Store[T]) get(namespace, name string) (T, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objects[key(namespace, name)]
	if !ok {
		var zero T
		return zero, s.notFound(name)
	}
	return o.DeepCopy(), nil
}

func (s *Store[T]) list(namespace string, selector labels.Selector) []T {
	var out []T
	for _, o := range s.Objects() {
		if (namespace == "" || o.GetNamespace() == namespace) && (selector == nil || selector.Matches(labels.Set(o.GetLabels()))) {
			out = append(out, o)
		}
	}
	return out
}

func (s *Store[T]) addIndexer(name string, indexer generic.Indexer[T]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.indexers[name] = indexer
}

func (s *Store[T]) getByIndex(indexName, value string) ([]T, error) {
	s.mu.Lock()
	indexer, ok := s.indexers[indexName]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no index %s", indexName)
	}
	var out []T
	for _, o := range s.Objects() {
		values, err := indexer(o)
		if err != nil {
			return nil, err
		}
		if slices.Contains(values, value) {
			out = append(out, o)
		}
	}
	return out, nil
}

func (s *Store[T]) enqueue(namespace, name string, after time.Duration, delayed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Enqueued = append(s.Enqueued, key(namespace, name))
	if delayed {
		s.Delays = append(s.Delays, after)
	}
}

// errNotServed is what the fakes answer for what unit tests never need: watches, patches and
// impersonation.
func errNotServed(what string) error { return fmt.Errorf("the in-memory fake does not serve %s", what) }
