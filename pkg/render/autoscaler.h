/*
 * autoscaler: the cluster-autoscaler priority-expander ConfigMap that scales
 * the GPU pools in the order the policy prefers them (cheapest first).
 *
 * cluster-autoscaler's priority expander (expander/priority) reads
 * kube-system/cluster-autoscaler-priority-expander, key "priorities": a YAML
 * map of priority (higher wins) to regular expressions searched for in each
 * node group's id; on AKS a node group is a pool's virtual machine scale set,
 * named aks-<pool>-<number>-vmss. Pure: builds text, does no I/O.
 */
#ifndef GPU_ADMISSION_AUTOSCALER_H
#define GPU_ADMISSION_AUTOSCALER_H

#include <stddef.h>

#include "policy/config.h"
#include "base/error.h"

/*
 * New: the ConfigMap as YAML text (free()), one priority per AKS node pool
 * the pools select by kubernetes.azure.com/agentpool, the first pool highest,
 * and every other node group below them all. skipped (cap bytes, may be
 * NULL) receives the names of pools that do not select by that label,
 * comma-separated. NULL with ERROR_CONFIG when no pool does, or ERROR_NOMEM.
 */
char *autoscaler_priority_configmap(const struct config *cfg, char *skipped, size_t cap, struct error *err);

#endif
