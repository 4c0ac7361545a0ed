# The Transformer tutorial (docs/tutorials/transformer.md) end to end: a short
# run of examples/transformer at 2 ranks through the launcher (automatic
# distribution of padded global batches, fit in rounds, greedy decoding on the
# master) must translate well above chance. Chance is about 32^-4 per sentence; 6 epochs reach an
# exact match of 0.638 (8 epochs 0.794 for a third more time; 4 only 0.218),
# so 0.3 leaves room for other LibTorch builds and BLAS libraries.
add_test(NAME example.transformer_exact_match
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/check_accuracy.sh --label "final exact match" 0.3
                 ${TNT_LAUNCHER} -n 2 -- $<TARGET_FILE:transformer>
                 --params tiny --epochs 6 --epochs-per-round 3 --test-size 500 --seed 42
                 --verbose 2)
set_tests_properties(example.transformer_exact_match PROPERTIES TIMEOUT 420 LABELS example
                     PROCESSORS 2)

# Variable-length data under automatic distribution: a few
# steps with fit()'s split of padded global batches end with the weights of
# the hand-sharded pipeline (--sharding manual), within 1e-5, at 1 and 2 ranks.
add_test(NAME example.transformer_auto_equals_manual_sharding
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/transformer_sharding.sh ${TNT_PYTHON} ${TNT_LAUNCHER}
                 $<TARGET_FILE:transformer> ${CMAKE_CURRENT_BINARY_DIR}/transformer_sharding)
set_tests_properties(example.transformer_auto_equals_manual_sharding PROPERTIES TIMEOUT 120
                     LABELS example)
