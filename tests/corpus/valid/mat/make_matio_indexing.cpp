// Writes matio_indexing_v5.mat and matio_indexing_v73.mat: MAT files from matio (Debian's
// libmatio 1.5.23, built with HDF5) holding channel data in a cell and in struct arrays, as
// tests/io/test_mat_indexing.cpp describes them (IoMatIndexing). matio's v7.3 writer lays cells and
// struct arrays out as MATLAB does (object references into /#refs#), and io reads v7.3 through
// its own HDF5 walk, so the v7.3 file is an independent writer's. They also seed the mat_fields
// and mat73_fields fuzzers. Made once; from this directory:
//   g++ -std=c++20 make_matio_indexing.cpp -lmatio -o /tmp/make_matio_indexing && /tmp/make_matio_indexing
#include <matio.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

// matio's variables, each owned by the struct or cell it is put into (matio frees them with it).
matvar_t* doubles(std::vector<std::size_t> dims, const std::vector<double>& values) {
  return Mat_VarCreate(nullptr, MAT_C_DOUBLE, MAT_T_DOUBLE, static_cast<int>(dims.size()), dims.data(),
                       const_cast<double*>(values.data()), 0);
}
matvar_t* int16s(std::vector<std::size_t> dims, const std::vector<std::int16_t>& values) {
  return Mat_VarCreate(nullptr, MAT_C_INT16, MAT_T_INT16, static_cast<int>(dims.size()), dims.data(),
                       const_cast<std::int16_t*>(values.data()), 0);
}
matvar_t* text(const std::string& s) {
  std::size_t dims[2] = {1, s.size()};
  return Mat_VarCreate(nullptr, MAT_C_CHAR, MAT_T_UINT8, 2, dims, const_cast<char*>(s.data()), 0);
}
matvar_t* cell(const char* name, std::vector<std::size_t> dims, const std::vector<matvar_t*>& elements) {
  matvar_t* c = Mat_VarCreate(name, MAT_C_CELL, MAT_T_CELL, static_cast<int>(dims.size()), dims.data(), nullptr, 0);
  for (std::size_t k = 0; k < elements.size(); ++k) Mat_VarSetCell(c, static_cast<int>(k), elements[k]);
  return c;
}
matvar_t* structure(const char* name, std::vector<std::size_t> dims, std::vector<const char*> fields) {
  return Mat_VarCreateStruct(name, static_cast<int>(dims.size()), dims.data(), fields.data(),
                             static_cast<unsigned>(fields.size()));
}

// What the file holds, in MATLAB's words:
//   RcvData = {int16 4 x 3 x 2}                  (a 1 x 1 cell: Verasonics' channel data)
//   C = {[1 2 3], struct('d', [5; 6]); 'x', []}  (2 x 2)
//   S = 1 x 3 struct array, S(k).data = [10k, 10k + 1], S(k).name = 'k'
//   P.rx = 2 x 1 struct array, P.rx(k).data = k x 2 of k; P.c = {[7 8]}; P.fs = 20e6
//   CZ = cell(0, 0); SE0 = 1 x 0 struct array with field data; SNF = 1 x 2 struct array without
//   fields; LC = {logical([1 0 1])}; NC = {{[3 4]}}; SC(k).c = {k} (1 x 2); C3 = 2 x 3 x 2 cell,
//   C3{k} = k; SP = a 3 x 3 sparse matrix
std::vector<std::int16_t> rcv_values() {
  std::vector<std::int16_t> v;
  for (int k = 0; k < 24; ++k) v.push_back(static_cast<std::int16_t>(k - 12));
  return v;
}

void write_indexing_file(const std::string& file, mat_ft version) {
  mat_t* m = Mat_CreateVer(file.c_str(), nullptr, version);
  if (!m) {
    std::fprintf(stderr, "matio cannot create %s\n", file.c_str());
    std::exit(1);
  }
  std::vector<matvar_t*> vars;
  vars.push_back(cell("RcvData", {1, 1}, {int16s({4, 3, 2}, rcv_values())}));

  matvar_t* inner = structure(nullptr, {1, 1}, {"d"});
  Mat_VarSetStructFieldByName(inner, "d", 0, doubles({2, 1}, {5, 6}));
  // Column-major: C{1} = C{1,1}, C{2} = C{2,1}, C{3} = C{1,2}, C{4} = C{2,2}.
  vars.push_back(cell("C", {2, 2}, {doubles({1, 3}, {1, 2, 3}), text("x"), inner, doubles({0, 0}, {})}));

  matvar_t* s = structure("S", {1, 3}, {"data", "name"});
  for (std::size_t k = 0; k < 3; ++k) {
    const double base = 10.0 * double(k + 1);
    Mat_VarSetStructFieldByName(s, "data", k, doubles({1, 2}, {base, base + 1}));
    Mat_VarSetStructFieldByName(s, "name", k, text(std::to_string(k + 1)));
  }
  vars.push_back(s);

  matvar_t* rx = structure(nullptr, {2, 1}, {"data"});
  Mat_VarSetStructFieldByName(rx, "data", 0, doubles({1, 2}, {1, 1}));
  Mat_VarSetStructFieldByName(rx, "data", 1, doubles({2, 2}, {2, 2, 2, 2}));
  matvar_t* p = structure("P", {1, 1}, {"rx", "c", "fs"});
  Mat_VarSetStructFieldByName(p, "rx", 0, rx);
  Mat_VarSetStructFieldByName(p, "c", 0, cell(nullptr, {1, 1}, {doubles({1, 2}, {7, 8})}));
  Mat_VarSetStructFieldByName(p, "fs", 0, doubles({1, 1}, {20e6}));
  vars.push_back(p);

  // Empty and odd ones: a 0 x 0 cell, a 1 x 0 struct array with a field, a 1 x 2 struct array
  // without fields, a logical array in a cell, cells in a cell, a cell in a struct array's element,
  // and a 2 x 3 x 2 cell whose element k (column-major) is k.
  vars.push_back(cell("CZ", {0, 0}, {}));
  vars.push_back(structure("SE0", {1, 0}, {"data"}));
  vars.push_back(structure("SNF", {1, 2}, {}));
  {
    std::uint8_t bits[3] = {1, 0, 1};
    std::size_t dims[2] = {1, 3};
    vars.push_back(cell("LC", {1, 1}, {Mat_VarCreate(nullptr, MAT_C_UINT8, MAT_T_UINT8, 2, dims, bits, MAT_F_LOGICAL)}));
  }
  vars.push_back(cell("NC", {1, 1}, {cell(nullptr, {1, 1}, {doubles({1, 2}, {3, 4})})}));
  matvar_t* sc = structure("SC", {1, 2}, {"c"});
  Mat_VarSetStructFieldByName(sc, "c", 0, cell(nullptr, {1, 1}, {doubles({1, 1}, {1})}));
  Mat_VarSetStructFieldByName(sc, "c", 1, cell(nullptr, {1, 1}, {doubles({1, 1}, {2})}));
  vars.push_back(sc);
  std::vector<matvar_t*> numbered;
  for (int k = 1; k <= 12; ++k) numbered.push_back(doubles({1, 1}, {double(k)}));
  vars.push_back(cell("C3", {2, 3, 2}, numbered));
  // A 3 x 3 sparse matrix, one value: matio writes its indices as miUINT32 (MATLAB: miINT32).
  {
    static mat_uint32_t ir[1] = {1}, jc[4] = {0, 1, 1, 1};
    static double value[1] = {5};
    static mat_sparse_t sparse{1, ir, 1, jc, 4, 1, value};
    std::size_t dims[2] = {3, 3};
    vars.push_back(Mat_VarCreate("SP", MAT_C_SPARSE, MAT_T_DOUBLE, 2, dims, &sparse, MAT_F_DONT_COPY_DATA));
  }

  for (matvar_t* v : vars) {
    if (Mat_VarWrite(m, v, MAT_COMPRESSION_NONE) != 0) {
      std::fprintf(stderr, "matio cannot write %s\n", v->name);
      std::exit(1);
    }
    Mat_VarFree(v);
  }
  Mat_Close(m);
}

}  // namespace

int main() {
  write_indexing_file("matio_indexing_v5.mat", MAT_FT_MAT5);
  write_indexing_file("matio_indexing_v73.mat", MAT_FT_MAT73);
}
