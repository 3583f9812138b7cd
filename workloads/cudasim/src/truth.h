#ifndef CUDASIM_TRUTH_H
#define CUDASIM_TRUTH_H

#include <stdio.h>
#include "cupti_client.h"
#include "kineto.h"
#include "model.h"

#define CUDASIM_TRUTH_SCHEMA "cudasim-truth/1"

int truth_write_json(FILE *out, const struct decode_config *cfg, const char *binary,
                     const struct worker_summary *workers, int n_workers, uint64_t start_ns,
                     uint64_t end_ns, const struct kineto_clock *kineto, const char *kineto_path,
                     const struct cupti_client_result *client);

#endif
