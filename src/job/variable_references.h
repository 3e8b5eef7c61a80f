// Kubernetes' $(VAR) references in a container's command and args, expanded as the kubelet does
// (k8s.io/kubernetes third_party/forked/golang/expansion): `$(NAME)` becomes the value of the
// container's variable NAME; a reference to a variable the container does not have stays as it
// is written; `$$` is one literal `$`, so `$$(NAME)` is the text `$(NAME)`; any other `$` stays.
// The shell never sees these: a reference is replaced before the program starts, whatever the
// program. Locally the executor expands a replica's command and args with the same rule and the
// variables its pod would have on Kubernetes (exec/replica_environment.h), so one manifest reads
// the same in both places: `--work_dir=/tmp/$(COHORT_JOB_NAME)` names the job's own directory.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace cohort::job {

// The variable that holds the job's name in every replica's main container, locally and on
// Kubernetes (where the operator sets it), for `$(COHORT_JOB_NAME)` in args.
inline constexpr char kJobNameVariable[] = "COHORT_JOB_NAME";

// `text` with its $(NAME) references replaced by `variables`' values, as described above.
std::string ExpandVariableReferences(const std::string& text,
                                     const std::map<std::string, std::string>& variables);

// Each of `arguments` expanded as ExpandVariableReferences does.
std::vector<std::string> ExpandVariableReferences(
    const std::vector<std::string>& arguments, const std::map<std::string, std::string>& variables);

}  // namespace cohort::job
