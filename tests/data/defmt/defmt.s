@ A hand-made defmt image for fwfix's RTT decoder tests: a .defmt section whose symbols are
@ defmt's JSON-encoded format strings (their addresses are the frame indices), the defmt
@ version and the encoding. Rebuild with:
@   arm-none-eabi-as defmt.s -o defmt.o && arm-none-eabi-ld -n -e 0 defmt.o -o defmt.elf
    .section .defmt,"",%progbits
    .global "{\"package\":\"fw\",\"tag\":\"defmt_info\",\"data\":\"crc ok {=u8}\",\"disambiguator\":\"1\",\"crate_name\":\"fw\"}"
"{\"package\":\"fw\",\"tag\":\"defmt_info\",\"data\":\"crc ok {=u8}\",\"disambiguator\":\"1\",\"crate_name\":\"fw\"}":
    .byte 0
    .global "{\"package\":\"fw\",\"tag\":\"defmt_error\",\"data\":\"FAIL: {=str}\",\"disambiguator\":\"2\",\"crate_name\":\"fw\"}"
"{\"package\":\"fw\",\"tag\":\"defmt_error\",\"data\":\"FAIL: {=str}\",\"disambiguator\":\"2\",\"crate_name\":\"fw\"}":
    .byte 0
    .global "_defmt_version_ = 4"
    .set "_defmt_version_ = 4", 0
    .global "_defmt_encoding_ = raw"
    .set "_defmt_encoding_ = raw", 0
    .text
    bx lr
