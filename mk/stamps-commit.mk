# Read last: every stamp write_if_changed was given is compared with what
# is there and moved over it only when it differs (see the Makefile).
$(shell cd $(STAMPS_PENDING_DIR) && for f in $(foreach f,$(STAMPS_PENDING),'$(subst /,%,$(f))'); do \
	s=$${f//%//}; [[ -f $$s && "$$(<"$$f")" == "$$(<"$$s")" ]] || mv -f "$$f" "$$s"; done; \
	rm -rf $(STAMPS_PENDING_DIR))
