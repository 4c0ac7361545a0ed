# The ResNet tutorial's tests (examples/resnet, docs/tutorials/resnet.md):
# the three inputs and the three networks, at 2 ranks through the launcher,
# with small settings (the whole file runs in about a minute).
set(resnet_work ${CMAKE_CURRENT_BINARY_DIR}/resnet)

# tnt_resnet_test(NAME EXPECT regex COMMAND args...): passes when the command
# exits with 0 AND its output matches the regex (PASS_REGULAR_EXPRESSION
# alone would ignore the exit status).
function(tnt_resnet_test name)
  cmake_parse_arguments(T "" "EXPECT;TIMEOUT" "COMMAND" ${ARGN})
  add_test(NAME ${name}
           COMMAND bash -c [[out=$("${@:2}" 2>&1); status=$?; echo "$out" | tail -15
                             [ "$status" -eq 0 ] || { echo "FAIL: exit status $status"; exit 1; }
                             grep -qE -- "$1" <<<"$out" || { echo "FAIL: no line matches '$1'"; exit 1; }]]
                   resnet_test "${T_EXPECT}" ${T_COMMAND})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS example)
endfunction()

# (a) ResNet-20 learns Fashion-MNIST resized (to 16x16 here, to keep the
# test short): one epoch of 128 steps on 4096 images gives about 65% on 512
# test images (seeded, so the same on every run), far above the 10% of chance.
add_test(NAME example.resnet_cifar_fashion_mnist
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/check_accuracy.sh 0.5
                 ${TNT_LAUNCHER} -n 2 -- $<TARGET_FILE:resnet> --model cifar --data fashion-mnist
                 --image-size 16 --train-size 4096 --val-size 512 --batch-size 32 --epochs 1
                 --learning-rate 0.05 --warmup-epochs 0.25 --verbose 2)
set_tests_properties(example.resnet_cifar_fashion_mnist PROPERTIES TIMEOUT 180 LABELS example
                     PROCESSORS 2)

# (b) An image folder of PNG and JPEG files (written by the program itself):
# ResNet-18 trains an epoch, and each rank decodes only its half of the
# 32 training and 16 validation images (decoding happens after distribution).
# At 16x16 most JPEGs (about 48x40) are decoded at half size by libjpeg.
add_test(NAME example.resnet_make_image_folder
         COMMAND $<TARGET_FILE:resnet> --make-image-folder ${resnet_work}/images
                 --num-classes 4 --images-per-class 8)
set_tests_properties(example.resnet_make_image_folder PROPERTIES TIMEOUT 60 LABELS example
                     FIXTURES_SETUP resnet_images)
tnt_resnet_test(example.resnet_image_folder TIMEOUT 120
  EXPECT "images decoded per rank: 24 24 \\(48 in all\\)"
  COMMAND ${TNT_LAUNCHER} -n 2 -- $<TARGET_FILE:resnet> --model resnet18 --data images
          --train-dir ${resnet_work}/images/train --val-dir ${resnet_work}/images/val
          --image-size 16 --batch-size 8 --epochs 1 --workers 2 --verbose 2
          --checkpoint-dir ${resnet_work}/checkpoints --tensorboard ${resnet_work}/tensorboard)
set_tests_properties(example.resnet_image_folder PROPERTIES
                     FIXTURES_REQUIRED "resnet_images;resnet_no_checkpoints"
                     FIXTURES_SETUP resnet_checkpoint)
# No checkpoints of an earlier ctest run: the resume test must find epoch 1.
add_test(NAME example.resnet_clear_checkpoints
         COMMAND ${CMAKE_COMMAND} -E rm -rf ${resnet_work}/checkpoints)
set_tests_properties(example.resnet_clear_checkpoints PROPERTIES TIMEOUT 30 LABELS example
                     FIXTURES_SETUP resnet_no_checkpoints)
# ... and resumes from the newest checkpoint that run wrote (tnt::latest_checkpoint).
tnt_resnet_test(example.resnet_resume TIMEOUT 120
  EXPECT "resuming from .*epoch-0001.pt"
  COMMAND ${TNT_LAUNCHER} -n 2 -- $<TARGET_FILE:resnet> --model resnet18 --data images
          --train-dir ${resnet_work}/images/train --val-dir ${resnet_work}/images/val
          --image-size 16 --batch-size 8 --epochs 2 --workers 2 --verbose 2
          --checkpoint-dir ${resnet_work}/checkpoints --resume)
set_tests_properties(example.resnet_resume PROPERTIES FIXTURES_REQUIRED
                     "resnet_images;resnet_checkpoint")

# The same training folder packed into tar shards by tnt-pack-shards (the
# library's reading of them is tested in data_image_tests).
tnt_resnet_test(example.resnet_pack_shards TIMEOUT 60
  EXPECT "packed 32 images of 4 classes into 4 shards"
  COMMAND $<TARGET_FILE:tnt_pack_shards> ${resnet_work}/images/train ${resnet_work}/shards/train
          --samples-per-shard 8)
set_tests_properties(example.resnet_pack_shards PROPERTIES FIXTURES_REQUIRED resnet_images)

# (c) ResNet-50 on synthetic data: two steps at 64x64, with a throughput.
tnt_resnet_test(example.resnet50_synthetic TIMEOUT 120
  EXPECT "training throughput: [0-9.]+ images/s"
  COMMAND ${TNT_LAUNCHER} -n 2 -- $<TARGET_FILE:resnet> --model resnet50 --data synthetic
          --image-size 64 --num-classes 10 --train-size 16 --batch-size 8 --epochs 1 --verbose 2)

# (d) --sync-bn: ResNet-20 with SyncBatchNorm at 3 ranks, uneven micro-batches
# (32 = 11 + 11 + 10) and a short last batch of 2, so rank 2 runs its
# BatchNorm collectives on an empty micro-batch.
tnt_resnet_test(example.resnet_sync_bn TIMEOUT 180
  EXPECT "BatchNorm statistics: global batch \\(SyncBatchNorm\\)"
  COMMAND ${TNT_LAUNCHER} -n 3 -- $<TARGET_FILE:resnet> --model cifar --data fashion-mnist
          --image-size 16 --train-size 194 --val-size 64 --batch-size 32 --epochs 1 --sync-bn
          --verbose 2)

# (e) --pipeline-stages 2 at 2 ranks: the stem, residual blocks and head of
# ResNet-20 as a Sequential cut into 2 stages (1 replica); each rank holds
# its stage's part of the 272474 parameters, and the pipeline learns
# Fashion-MNIST as the data-parallel run (a) does (ctest -R pipeline).
add_test(NAME example.resnet_pipeline_stages
         COMMAND bash -c [[out=$("$@" 2>&1); status=$?; echo "$out" | tail -15
                           [ "$status" -eq 0 ] || { echo "FAIL: exit status $status"; exit 1; }
                           grep -qE "^rank 1: stage 1 of 2, [0-9]+ of 272474 parameters" <<<"$out" ||
                             { echo "FAIL: no line says rank 1 holds stage 1"; exit 1; }
                           grep -qE "test accuracy: (0\.[5-9]|1)" <<<"$out" ||
                             { echo "FAIL: test accuracy below 0.5"; exit 1; }]]
                 resnet_pipeline ${TNT_LAUNCHER} -n 2 -- $<TARGET_FILE:resnet> --model cifar
                 --data fashion-mnist --image-size 16 --train-size 4096 --val-size 512
                 --batch-size 32 --epochs 1 --learning-rate 0.05 --warmup-epochs 0.25
                 --pipeline-stages 2 --verbose 2)
set_tests_properties(example.resnet_pipeline_stages PROPERTIES TIMEOUT 240 LABELS example
                     PROCESSORS 2)
