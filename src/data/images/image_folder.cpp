// list_image_folder: the ImageNet layout, <dir>/<class>/<image>. Reads names
// only; sorting makes the order (and so the labels and every shuffle) the
// same on every rank and every run.
#include <tarantella/base/error.h>
#include <tarantella/data/images.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace tnt::data {
namespace {

namespace fs = std::filesystem;

bool is_image_name(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

// The error_code forms throughout: an unreadable folder is a tnt::Error
// naming it, never a std::filesystem_error.
std::vector<fs::path> sorted_entries(const fs::path& dir, bool directories) {
  std::vector<fs::path> entries;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code kind;
    if (directories ? it->is_directory(kind)
                    : (it->is_regular_file(kind) && is_image_name(it->path())))
      entries.push_back(it->path());
  }
  TNT_CHECK(!ec, "image folder: cannot list ", dir.string(), ": ", ec.message(),
            " (check that it exists and is readable)");
  std::sort(entries.begin(), entries.end());
  return entries;
}

// The label of class folder `name`: its index in list.classes, appended
// there when no fixed class list was given.
std::int64_t label_of(ImageList& list, const fs::path& class_dir, bool fixed) {
  const std::string name = class_dir.filename().string();
  auto known = std::find(list.classes.begin(), list.classes.end(), name);
  if (known != list.classes.end()) return known - list.classes.begin();
  TNT_CHECK(!fixed, "image folder: class folder ", class_dir.string(),
            " is not one of the given classes (e.g. the training folder's): remove it, or add ",
            "it to the training folder");
  list.classes.push_back(name);
  return static_cast<std::int64_t>(list.classes.size()) - 1;
}

}  // namespace

ImageList list_image_folder(const std::string& dir, const std::vector<std::string>& classes) {
  std::error_code ec;
  TNT_CHECK(fs::is_directory(dir, ec), "image folder ", dir,
            " does not exist or is not a directory: give a folder laid out as ", dir,
            "/<class>/<image>");
  ImageList list;
  list.classes = classes;
  for (const fs::path& class_dir : sorted_entries(dir, /*directories=*/true)) {
    const std::int64_t label = label_of(list, class_dir, !classes.empty());
    for (const fs::path& file : sorted_entries(class_dir, /*directories=*/false)) {
      list.paths.push_back(file.string());
      list.labels.push_back(label);
    }
  }
  TNT_CHECK(!list.paths.empty(), "image folder ", dir,
            " holds no .jpg/.jpeg/.png files in class sub-folders: expected ", dir,
            "/<class>/<image>");
  return list;
}

}  // namespace tnt::data
