#include "serve/servable.h"

#include <torch/script.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <mutex>
#include <sstream>

#include "serve/image_decoding.h"
#include "train/model_manifest.h"
#include "train/saved_model.h"

namespace cohort::serve {
namespace {

namespace fs = std::filesystem;

std::string Index(size_t index) { return "[" + std::to_string(index) + "]"; }

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

int64_t Product(const std::vector<int64_t>& shape) {
  int64_t product = 1;
  for (int64_t dimension : shape) product *= dimension;
  return product;
}

// Walks a nested array: fixes each level's length at its first visit, checks every other against
// it, and appends the numbers in row-major order.
Status Flatten(const nlohmann::json& value, size_t depth, const std::string& path,
               DecodedInstance* out) {
  if (value.is_array()) {
    if (depth >= kMaxInstanceRank) {
      return Status::InvalidArgument(path + ": nested deeper than " +
                                     std::to_string(kMaxInstanceRank) + " levels");
    }
    const int64_t length = static_cast<int64_t>(value.size());
    if (out->shape.size() == depth) {
      if (!out->values.empty()) {
        return Status::InvalidArgument(path + ": an array where the earlier elements have numbers");
      }
      out->shape.push_back(length);
    } else if (out->shape.size() < depth || out->shape[depth] != length) {
      return Status::InvalidArgument(
          path + ": " + std::to_string(length) + " elements where the first element has shape " +
          ShapeText(std::vector<int64_t>(out->shape.begin() + std::min(depth, out->shape.size()),
                                         out->shape.end())) +
          " (instances are rectangular arrays)");
    }
    if (length == 0) return Status::InvalidArgument(path + ": an empty array");
    for (size_t i = 0; i < value.size(); ++i) {
      COHORT_RETURN_IF_ERROR(Flatten(value[i], depth + 1, path + Index(i), out));
    }
    return Status::OK();
  }
  if (!value.is_number()) {
    return Status::InvalidArgument(path + ": " + std::string(value.type_name()) +
                                   " where a number must be");
  }
  if (out->shape.size() != depth) {
    return Status::InvalidArgument(path + ": a number where the first element has an array");
  }
  if (static_cast<int64_t>(out->values.size()) >= kMaxInstanceValues) {
    return Status::InvalidArgument(path + ": more than " + std::to_string(kMaxInstanceValues) +
                                   " numbers in one instance");
  }
  const double number = value.get<double>();
  if (!std::isfinite(number) || std::fabs(number) > 3.4e38) {
    return Status::InvalidArgument(path + ": " + value.dump() + " is not a finite float");
  }
  out->values.push_back(static_cast<float>(number));
  return Status::OK();
}

// The value of an object's one input key (`field` gets ".KEY"); the object itself otherwise.
StatusOr<const nlohmann::json*> OneInput(const nlohmann::json& instance, std::string* field) {
  if (!instance.is_object() || instance.contains("b64")) return &instance;
  if (instance.size() != 1) {
    std::string keys;
    for (const auto& [key, unused] : instance.items()) keys += (keys.empty() ? "" : ", ") + key;
    return Status::InvalidArgument(*field + ": an object must have one input key, this one has " +
                                   std::to_string(instance.size()) +
                                   (keys.empty() ? "" : " (" + keys + ")"));
  }
  *field += "." + instance.begin().key();
  return &instance.begin().value();
}

class ImageClassifierServable : public Servable {
 public:
  explicit ImageClassifierServable(std::unique_ptr<train::SavedModel> model)
      : model_(std::move(model)),
        rows_(model_->manifest().input_shape[1]),
        cols_(model_->manifest().input_shape[2]) {}

  std::string framework() const override { return "COHORT"; }

  nlohmann::json Signature() const override {
    const train::ModelManifest& manifest = model_->manifest();
    return {{"model", manifest.model},
            {"inputs",
             {{"image",
               {{"dtype", "DT_FLOAT"},
                {"shape", {-1, rows_, cols_}},
                {"description", "pixels scaled to [0, 1], or a PNG as {\"b64\": ...}"}}}}},
            {"outputs",
             {{"class_id", {{"dtype", "DT_INT64"}, {"shape", {-1}}}},
              {"class", {{"dtype", "DT_STRING"}, {"shape", {-1}}}},
              {"probabilities",
               {{"dtype", "DT_FLOAT"},
                {"shape", {-1, static_cast<int64_t>(manifest.classes.size())}}}}}},
            {"classes", manifest.classes}};
  }

  StatusOr<DecodedInstance> DecodeInstance(const nlohmann::json& instance,
                                           size_t index) const override {
    std::string field = "instance " + std::to_string(index);
    StatusOr<const nlohmann::json*> input = OneInput(instance, &field);
    if (!input.ok()) return input.status();
    const nlohmann::json& value = **input;
    DecodedInstance decoded;
    decoded.shape = {rows_, cols_};
    if (value.is_object()) {
      if (value.size() != 1 || !value.at("b64").is_string()) {
        return Status::InvalidArgument(field + ": an encoded image is {\"b64\": \"<base64 PNG>\"}");
      }
      StatusOr<std::string> bytes = DecodeBase64(value.at("b64").get<std::string>());
      if (!bytes.ok()) return bytes.status().WithContext(field + ".b64");
      StatusOr<GrayImage> image = DecodePng(*bytes, rows_, cols_);
      if (!image.ok()) return image.status().WithContext(field + ".b64");
      decoded.values.reserve(image->pixels.size());
      for (uint8_t pixel : image->pixels) decoded.values.push_back(pixel / 255.0f);
      return decoded;
    }
    if (!value.is_array()) {
      return Status::InvalidArgument(field + ": " + std::string(value.type_name()) +
                                     " where an image must be (a " + std::to_string(rows_) + "x" +
                                     std::to_string(cols_) +
                                     " array of pixels in [0, 1], or {\"b64\": \"<PNG>\"})");
    }
    StatusOr<DecodedInstance> numbers = DecodeNestedArray(value, field);
    if (!numbers.ok()) return numbers.status();
    const std::vector<int64_t>& shape = numbers->shape;
    const bool fits = shape == std::vector<int64_t>{rows_, cols_} ||
                      shape == std::vector<int64_t>{rows_, cols_, 1} ||
                      shape == std::vector<int64_t>{1, rows_, cols_} ||
                      shape == std::vector<int64_t>{rows_ * cols_};
    if (!fits) {
      return Status::InvalidArgument(field + ": an image of shape " + ShapeText(shape) +
                                     "; the model takes " + std::to_string(rows_) + "x" +
                                     std::to_string(cols_) + " pixels");
    }
    for (size_t i = 0; i < numbers->values.size(); ++i) {
      const float pixel = numbers->values[i];
      if (pixel < 0.0f || pixel > 1.0f) {
        return Status::InvalidArgument(
            field + "[" + std::to_string(static_cast<int64_t>(i) / cols_) + "][" +
            std::to_string(static_cast<int64_t>(i) % cols_) + "]: pixel " +
            nlohmann::json(pixel).dump() +
            " is outside [0, 1] (scale pixels by 1/255, or send a PNG as {\"b64\": ...})");
      }
    }
    decoded.values = std::move(numbers->values);
    return decoded;
  }

  StatusOr<std::vector<nlohmann::json>> Predict(const std::vector<float>& values, int64_t count,
                                                const std::vector<int64_t>&) override {
    std::unique_lock lock(mutex_);  // SavedModel is not to be used from two threads at once
    StatusOr<std::vector<float>> probabilities = model_->PredictProbabilities(values.data(), count);
    lock.unlock();
    if (!probabilities.ok()) return probabilities.status();
    const int64_t classes = model_->num_classes();
    std::vector<nlohmann::json> predictions;
    predictions.reserve(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      const float* row = probabilities->data() + i * classes;
      const int64_t best = std::max_element(row, row + classes) - row;
      predictions.push_back({{"class_id", best},
                             {"class", model_->manifest().classes[static_cast<size_t>(best)]},
                             {"probabilities", std::vector<float>(row, row + classes)}});
    }
    return predictions;
  }

 private:
  std::unique_ptr<train::SavedModel> model_;
  const int64_t rows_, cols_;
  std::mutex mutex_;
};

// A tensor's values as nested JSON arrays (a 0-d tensor as a number).
nlohmann::json TensorJson(const torch::Tensor& tensor) {
  if (tensor.dim() == 0) {
    if (tensor.is_floating_point()) return tensor.item<double>();
    return tensor.item<int64_t>();
  }
  nlohmann::json array = nlohmann::json::array();
  for (int64_t i = 0; i < tensor.size(0); ++i) array.push_back(TensorJson(tensor[i]));
  return array;
}

class TorchScriptServable : public Servable {
 public:
  TorchScriptServable(torch::jit::Module module, std::string schema)
      : module_(std::move(module)), schema_(std::move(schema)) {}

  std::string framework() const override { return "TORCHSCRIPT"; }

  nlohmann::json Signature() const override {
    return {
        {"model", "torchscript"},
        {"forward", schema_},
        {"inputs",
         {{"input",
           {{"dtype", "DT_FLOAT"},
            {"description", "a nested array of numbers; a batch stacks instances of one shape"}}}}},
        {"outputs", {{"output", {{"description", "forward's tensor, row by row"}}}}}};
  }

  StatusOr<DecodedInstance> DecodeInstance(const nlohmann::json& instance,
                                           size_t index) const override {
    std::string field = "instance " + std::to_string(index);
    StatusOr<const nlohmann::json*> input = OneInput(instance, &field);
    if (!input.ok()) return input.status();
    if (!(*input)->is_array() && !(*input)->is_number()) {
      return Status::InvalidArgument(field + ": " + std::string((*input)->type_name()) +
                                     " where a number or an array of numbers must be");
    }
    return DecodeNestedArray(**input, field);
  }

  StatusOr<std::vector<nlohmann::json>> Predict(const std::vector<float>& values, int64_t count,
                                                const std::vector<int64_t>& shape) override {
    try {
      torch::NoGradGuard no_grad;
      std::vector<int64_t> batch_shape = {count};
      batch_shape.insert(batch_shape.end(), shape.begin(), shape.end());
      torch::Tensor input =
          torch::from_blob(const_cast<float*>(values.data()), batch_shape, torch::kFloat);
      torch::jit::IValue output = module_.forward({input});
      if (!output.isTensor()) {
        return Status::Internal("the TorchScript module's forward returned " + output.tagKind() +
                                ", not a tensor");
      }
      torch::Tensor result = output.toTensor().detach().cpu().contiguous();
      if (result.dim() == 0 || result.size(0) != count) {
        return Status::Internal("the TorchScript module's forward returned a tensor of " +
                                std::to_string(result.dim() == 0 ? 0 : result.size(0)) +
                                " rows for a batch of " + std::to_string(count));
      }
      result = result.is_floating_point() ? result.to(torch::kDouble) : result.to(torch::kLong);
      std::vector<nlohmann::json> predictions;
      predictions.reserve(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) predictions.push_back(TensorJson(result[i]));
      return predictions;
    } catch (const c10::Error& error) {
      return Status::Internal(std::string("the TorchScript module failed: ") +
                              error.what_without_backtrace());
    }
  }

 private:
  torch::jit::Module module_;  // forward is safe from several threads
  std::string schema_;
};

StatusOr<std::unique_ptr<Servable>> LoadTorchScript(const std::string& file) {
  try {
    torch::jit::Module module = torch::jit::load(file);
    module.eval();
    std::ostringstream schema;
    schema << module.get_method("forward").function().getSchema();
    return std::unique_ptr<Servable>(new TorchScriptServable(std::move(module), schema.str()));
  } catch (const c10::Error& error) {
    return Status::InvalidArgument(file +
                                   ": not a TorchScript file that loads (save one with "
                                   "torch.jit.save(torch.jit.script(module), path)): " +
                                   error.what_without_backtrace());
  }
}

}  // namespace

StatusOr<DecodedInstance> DecodeNestedArray(const nlohmann::json& value, const std::string& where) {
  DecodedInstance decoded;
  COHORT_RETURN_IF_ERROR(Flatten(value, 0, where, &decoded));
  if (Product(decoded.shape) != static_cast<int64_t>(decoded.values.size())) {
    return Status::InvalidArgument(where + ": not a rectangular array");
  }
  return decoded;
}

StatusOr<std::unique_ptr<Servable>> LoadServable(const std::string& path) {
  std::error_code error;
  if (fs::is_directory(path, error)) {
    if (fs::exists(fs::path(path) / train::kManifestFile, error)) {
      StatusOr<train::ModelManifest> manifest = train::ReadManifest(path);
      if (!manifest.ok()) return manifest.status();
      if (manifest->input_shape.size() != 3) {
        return Status::InvalidArgument(
            path + " holds a " + manifest->model +
            " model, which this server cannot serve: it serves image classifiers (input_shape "
            "[channels, rows, cols]) and TorchScript files");
      }
      StatusOr<std::unique_ptr<train::SavedModel>> model = train::SavedModel::Load(path);
      if (!model.ok()) return model.status();
      return std::unique_ptr<Servable>(new ImageClassifierServable(std::move(*model)));
    }
    if (fs::exists(fs::path(path) / "model.pt", error)) {
      return LoadTorchScript((fs::path(path) / "model.pt").string());
    }
    return Status::InvalidArgument(path +
                                   " holds neither manifest.json (a saved model) nor "
                                   "model.pt (a TorchScript file)");
  }
  if (fs::is_regular_file(path, error)) return LoadTorchScript(path);
  return Status::InvalidArgument("no model at " + path +
                                 " (a saved model directory or a TorchScript file)");
}

}  // namespace cohort::serve
