# The Transformer tutorial (docs/tutorials/transformer.md) end to end: a short
# run of examples/transformer at 2 ranks through the launcher (manual
# distribution, fit in rounds, greedy decoding on the master) must translate
# well above chance. Chance is about 32^-4 per sentence; 8 epochs reach an
# exact match of about 0.7 (21 s here), so 0.3 leaves room for other LibTorch
# builds and BLAS libraries.
add_test(NAME example.transformer_exact_match
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/check_accuracy.sh --label "final exact match" 0.3
                 ${TNT_LAUNCHER} -n 2 -- $<TARGET_FILE:transformer>
                 --params tiny --epochs 8 --epochs-per-round 4 --test-size 500 --seed 42
                 --verbose 2)
set_tests_properties(example.transformer_exact_match PROPERTIES TIMEOUT 420 LABELS example
                     RUN_SERIAL TRUE)
