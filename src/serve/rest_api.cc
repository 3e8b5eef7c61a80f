#include "serve/rest_api.h"

namespace cohort::serve {
namespace {

RestResponse Error(int status, const std::string& message) {
  return {status, nlohmann::json{{"error", message}}.dump(), "", ""};
}

RestResponse ErrorOf(const cohort::Status& status) {
  return Error(HttpStatusOf(status), status.message());
}

struct Route {
  bool ai_platform = false;
  std::string model;
  std::string version;  // "" for the default
  std::string action;   // "", "/metadata" or ":predict"
};

// The route `path` names, or nothing when it is none of the API's.
std::optional<Route> ParseRoute(const std::string& path) {
  Route route;
  std::string rest;
  if (path.starts_with("/v1/projects/")) {
    const size_t models = path.find("/models/", 13);
    if (models == std::string::npos || path.find('/', 13) != models) return std::nullopt;
    route.ai_platform = true;
    rest = path.substr(models);
  } else if (path.starts_with("/v1/models/")) {
    rest = path.substr(3);
  } else {
    return std::nullopt;
  }
  // rest: /models/NAME[/versions/V][/metadata|:predict]
  size_t position = 8;
  auto segment = [&] {
    const size_t end = rest.find_first_of("/:", position);
    std::string value = rest.substr(position, end == std::string::npos ? end : end - position);
    position = end == std::string::npos ? rest.size() : end;
    return value;
  };
  route.model = segment();
  if (route.model.empty()) return std::nullopt;
  if (rest.compare(position, 10, "/versions/") == 0) {
    position += 10;
    route.version = segment();
    if (route.version.empty()) return std::nullopt;
  }
  route.action = rest.substr(position);
  if (route.action != "" && route.action != "/metadata" && route.action != ":predict") {
    return std::nullopt;
  }
  if (route.ai_platform && route.action != ":predict") return std::nullopt;
  return route;
}

// The instances of a predict body and whether it used the columnar form.
struct Instances {
  std::vector<const nlohmann::json*> values;
  bool columnar = false;
};

StatusOr<Instances> InstancesOf(const nlohmann::json& body) {
  if (!body.is_object()) {
    return cohort::Status::InvalidArgument(
        "the body must be a JSON object with \"instances\" or \"inputs\"");
  }
  const bool rows = body.contains("instances"), columns = body.contains("inputs");
  if (rows == columns) {
    return cohort::Status::InvalidArgument(
        rows ? "the body has both \"instances\" and \"inputs\"; send one"
             : "the body has neither \"instances\" (a list, one element per instance) nor "
               "\"inputs\"");
  }
  for (const auto& [key, unused] : body.items()) {
    if (key != "instances" && key != "inputs" && key != "signature_name") {
      return cohort::Status::InvalidArgument("the body's field \"" + key +
                                             "\" is unknown (instances, inputs, signature_name)");
    }
  }
  if (body.contains("signature_name") &&
      body["signature_name"] != nlohmann::json("serving_default")) {
    return cohort::Status::InvalidArgument(
        "signature_name: these models have one signature, \"serving_default\"");
  }
  Instances instances;
  instances.columnar = columns;
  const nlohmann::json* list = &body[rows ? "instances" : "inputs"];
  std::string field = rows ? "instances" : "inputs";
  if (columns && list->is_object()) {
    if (list->size() != 1) {
      return cohort::Status::InvalidArgument(
          "inputs: these models take one input; the object has " + std::to_string(list->size()));
    }
    field += "." + list->begin().key();
    list = &list->begin().value();
  }
  if (!list->is_array()) {
    return cohort::Status::InvalidArgument(field + ": a list of instances must be, not " +
                                           std::string(list->type_name()));
  }
  if (list->empty()) return cohort::Status::InvalidArgument(field + ": no instances");
  if (list->size() > kMaxInstancesPerRequest) {
    return cohort::Status::InvalidArgument(field + ": " + std::to_string(list->size()) +
                                           " instances, over the limit of " +
                                           std::to_string(kMaxInstancesPerRequest) + " a request");
  }
  for (const nlohmann::json& instance : *list) instances.values.push_back(&instance);
  return instances;
}

// Predictions as the columnar form answers them: objects' keys become outputs of lists.
nlohmann::json Columnar(const std::vector<nlohmann::json>& predictions) {
  if (predictions.empty() || !predictions.front().is_object()) return predictions;
  nlohmann::json outputs = nlohmann::json::object();
  for (const nlohmann::json& prediction : predictions) {
    for (const auto& [key, value] : prediction.items()) outputs[key].push_back(value);
  }
  return outputs;
}

}  // namespace

int HttpStatusOf(const cohort::Status& status) {
  switch (status.code()) {
    case cohort::Status::Code::kOk:
      return 200;
    case cohort::Status::Code::kInvalidArgument:
      return 400;
    case cohort::Status::Code::kNotFound:
      return 404;
    case cohort::Status::Code::kUnavailable:
      return 503;
    case cohort::Status::Code::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

RestResponse RestApi::Handle(const std::string& method, const std::string& path,
                             const std::string& body) const {
  std::optional<Route> route = ParseRoute(path);
  if (!route) {
    return Error(404, "no route " + path +
                          " (GET /v1/models/NAME[/versions/V][/metadata], POST "
                          "/v1/models/NAME[/versions/V]:predict)");
  }
  const bool predict = route->action == ":predict";
  if (method != (predict ? "POST" : "GET")) {
    return Error(405, path + " takes " + (predict ? "POST" : "GET") + ", not " + method);
  }
  if (predict) return Predict(route->model, route->version, body);
  if (route->action == "/metadata") return Metadata(route->model, route->version);
  return ModelStatus(route->model, route->version);
}

RestResponse RestApi::ModelStatus(const std::string& model, const std::string& version) const {
  StatusOr<std::shared_ptr<LoadedVersion>> loaded = models_->Find(model, version);
  if (!loaded.ok()) return ErrorOf(loaded.status());
  nlohmann::json statuses = nlohmann::json::array();
  for (const ModelSet::ModelState& state : models_->Models()) {
    if (state.name != model) continue;
    for (const std::string& name : state.loaded_versions) {
      if (!version.empty() && name != version) continue;
      statuses.push_back({{"version", name},
                          {"state", "AVAILABLE"},
                          {"status", {{"error_code", "OK"}, {"error_message", ""}}}});
    }
  }
  return {200, nlohmann::json{{"model_version_status", statuses}}.dump(), model,
          (*loaded)->version};
}

RestResponse RestApi::Metadata(const std::string& model, const std::string& version) const {
  StatusOr<std::shared_ptr<LoadedVersion>> loaded = models_->Find(model, version);
  if (!loaded.ok()) return ErrorOf(loaded.status());
  const Servable& servable = *(*loaded)->servable;
  nlohmann::json body = {
      {"model_spec", {{"name", model}, {"signature_name", ""}, {"version", (*loaded)->version}}},
      {"metadata",
       {{"signature_def", {{"signature_def", {{"serving_default", servable.Signature()}}}}},
        {"framework", servable.framework()}}}};
  return {200, body.dump(), model, (*loaded)->version};
}

RestResponse RestApi::Predict(const std::string& model, const std::string& version,
                              const std::string& body) const {
  StatusOr<std::shared_ptr<LoadedVersion>> found = models_->Find(model, version);
  if (!found.ok()) return ErrorOf(found.status());
  const std::shared_ptr<LoadedVersion>& loaded = *found;  // held until answered
  RestResponse response{200, "", model, loaded->version};
  auto fail = [&](const cohort::Status& status) {
    RestResponse error = ErrorOf(status);
    error.model = model;
    error.version = loaded->version;
    return error;
  };
  const nlohmann::json parsed = nlohmann::json::parse(body, nullptr, false);
  if (parsed.is_discarded()) {
    return fail(cohort::Status::InvalidArgument("the body is not JSON"));
  }
  StatusOr<Instances> instances = InstancesOf(parsed);
  if (!instances.ok()) return fail(instances.status());
  PredictionRequest request;
  request.count = static_cast<int64_t>(instances->values.size());
  for (size_t i = 0; i < instances->values.size(); ++i) {
    StatusOr<DecodedInstance> decoded = loaded->servable->DecodeInstance(*instances->values[i], i);
    if (!decoded.ok()) return fail(decoded.status());
    if (i == 0) {
      request.shape = decoded->shape;
      request.values.reserve(decoded->values.size() * instances->values.size());
    } else if (decoded->shape != request.shape) {
      return fail(cohort::Status::InvalidArgument(
          "instance " + std::to_string(i) + ": its shape differs from instance 0's (" +
          std::to_string(decoded->values.size()) + " numbers against " +
          std::to_string(request.values.size() / i) + "); one request's instances are alike"));
    }
    request.values.insert(request.values.end(), decoded->values.begin(), decoded->values.end());
  }
  StatusOr<std::shared_ptr<PendingPrediction>> pending =
      loaded->batcher->Submit(std::move(request));
  if (!pending.ok()) return fail(pending.status());
  StatusOr<std::vector<nlohmann::json>> predictions = (*pending)->Wait(prediction_timeout_);
  if (!predictions.ok()) return fail(predictions.status());
  response.body = instances->columnar ? nlohmann::json{{"outputs", Columnar(*predictions)}}.dump()
                                      : nlohmann::json{{"predictions", *predictions}}.dump();
  return response;
}

}  // namespace cohort::serve
