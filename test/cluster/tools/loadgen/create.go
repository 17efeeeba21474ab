package main

// create: make bench-watch-cluster's bulk creation (test/bench/watch-cluster.sh). The
// objects of a JSON List (pods, nodes, ResourceClaims: any kind the API server serves),
// created by C workers as fast as they go, each a client with a connection of its own
// (ownClient's reason, bench.go). What `kubectl create -f LIST` does, without its
// client-side rate limit: kubectl leaves the REST client's QPS at zero, which client-go
// reads as 5 requests a second (k8s.io/client-go rest/config.go DefaultQPS; kubectl
// raises only discovery's, pkg/cmd/cmd.go WithDiscoveryQPS), 30,000 s for 150,000 pods.
// An object that exists already counts as created (a rerun of a half-made List). Prints
// one JSON object: the objects, the errors (the first one's text) and the wall time.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// CreateResult is what create prints.
type CreateResult struct {
	Objects    int     `json:"objects"`
	Workers    int     `json:"workers"`
	Errors     int     `json:"errors"`
	FirstError string  `json:"firstError,omitempty"`
	Seconds    float64 `json:"seconds"`
	PerSec     float64 `json:"perSec"`
}

// resourceOf: the resource (plural) and scope of KIND in GROUP/VERSION, from discovery.
func resourceOf(cache map[string]*metav1.APIResourceList, cs interface {
	ServerResourcesForGroupVersion(string) (*metav1.APIResourceList, error)
}, gv, kind string) (string, bool, error) {
	l, ok := cache[gv]
	if !ok {
		var err error
		if l, err = cs.ServerResourcesForGroupVersion(gv); err != nil {
			return "", false, err
		}
		cache[gv] = l
	}
	for _, r := range l.APIResources {
		if r.Kind == kind && !strings.Contains(r.Name, "/") {
			return r.Name, r.Namespaced, nil
		}
	}
	return "", false, fmt.Errorf("%s does not serve kind %s", gv, kind)
}

func cmdCreate(args []string) error {
	fs := flag.NewFlagSet("create", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig")
	file := fs.String("f", "", "a JSON List of the objects")
	workers := fs.Int("workers", 8, "clients, each with its own connection, one request in flight each")
	fs.Parse(args)
	if *file == "" || *workers <= 0 {
		return errors.New("create: -f and a positive -workers are required")
	}
	b, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return err
	}
	b = nil
	// Each object's resource, from discovery, before the clock starts.
	cs, err := ownClient(*kubeconfig)
	if err != nil {
		return err
	}
	seen := map[string]*metav1.APIResourceList{}
	objs := make([]*unstructured.Unstructured, len(list.Items))
	gvrs := make([]schema.GroupVersionResource, len(list.Items))
	for i, r := range list.Items {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(r); err != nil {
			return fmt.Errorf("item %d: %v", i, err)
		}
		name, namespaced, err := resourceOf(seen, cs.Discovery(), u.GetAPIVersion(), u.GetKind())
		if err != nil {
			return err
		}
		if namespaced && u.GetNamespace() == "" {
			return fmt.Errorf("item %d: a %s without a namespace", i, u.GetKind())
		}
		gv, _ := schema.ParseGroupVersion(u.GetAPIVersion())
		objs[i], gvrs[i] = u, gv.WithResource(name)
		list.Items[i] = nil
	}
	clients := make([]*dynamic.DynamicClient, *workers)
	for i := range clients {
		rc, err := ownConfig(*kubeconfig)
		if err != nil {
			return err
		}
		if clients[i], err = dynamic.NewForConfig(rc); err != nil {
			return err
		}
	}
	errs, wall := fanOut(len(objs), *workers, func(w, i int) error {
		u := objs[i]
		_, err := clients[w].Resource(gvrs[i]).Namespace(u.GetNamespace()).Create(context.Background(), u, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	res := CreateResult{Objects: len(objs), Workers: *workers, Seconds: wall, PerSec: float64(len(objs)) / wall}
	res.Errors, res.FirstError = countErrors(errs)
	out, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Println(string(out))
	return nil
}
